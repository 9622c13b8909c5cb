import { type BlobRef, OBJECT_STORES } from "@fleet/protocol";
import type { ObjectStore } from "@nats-io/obj";
import type { BlobSink } from "../define-tool.js";

/**
 * A `BlobSink` on object store `fleet_blobs`. Names are `tool-output/<sid>/<toolCallId>/<name>`;
 * a name reused within one call gets a numeric suffix, so nothing of the call is overwritten.
 */
export function createNatsBlobSink(store: ObjectStore, prefix: string): BlobSink {
  const used = new Map<string, number>();
  return {
    async put(name, data, opts) {
      const n = used.get(name) ?? 0;
      used.set(name, n + 1);
      const full = `${prefix}/${n === 0 ? name : `${name}.${n}`}`;
      const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
      const info = await store.putBlob(
        { name: full, ...(opts?.mimeType ? { description: opts.mimeType } : {}) },
        bytes,
      );
      const ref: BlobRef = { bucket: OBJECT_STORES.blobs.name, name: info.name, size: info.size, digest: info.digest };
      return opts?.mimeType ? { ...ref, mimeType: opts.mimeType } : ref;
    },
  };
}

export const blobPrefix = (sessionId: string, toolCallId: string) => `tool-output/${sessionId}/${toolCallId}`;
