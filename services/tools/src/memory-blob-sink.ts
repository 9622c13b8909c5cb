import { createHash } from "node:crypto";
import type { BlobRef } from "@fleet/protocol";
import type { BlobSink } from "./define-tool.js";

/** A `BlobSink` that keeps blobs in memory: for unit tests of tools and for runs without NATS. */
export interface MemoryBlobSink extends BlobSink {
  readonly blobs: ReadonlyMap<string, Uint8Array>;
}

export function createMemoryBlobSink(bucket = "memory"): MemoryBlobSink {
  const blobs = new Map<string, Uint8Array>();
  return {
    blobs,
    async put(name, data, opts) {
      const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
      blobs.set(name, bytes);
      const ref: BlobRef = {
        bucket,
        name,
        size: bytes.byteLength,
        digest: `SHA-256=${createHash("sha256").update(bytes).digest("base64url")}`,
      };
      return opts?.mimeType ? { ...ref, mimeType: opts.mimeType } : ref;
    },
  };
}
