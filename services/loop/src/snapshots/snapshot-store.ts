// Session snapshots in KV `fleet_snapshots` (PROTOCOL change 42): key `<sessionId>` holds the header
// line and the body's first part, `<sessionId>.<k>` part k. Every read is a direct get.
import { KV_BUCKETS } from "@fleet/protocol";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import {
  decodeSnapshotBody,
  type EncodedSnapshot,
  readSnapshotHead,
  type SessionSnapshot,
  type SnapshotHeader,
  type SnapshotRejection,
} from "./snapshot-envelope.js";

export type SnapshotRead =
  | { kind: "none" }
  | { kind: "found"; snapshot: SessionSnapshot; bytes: number }
  | { kind: "rejected"; reason: SnapshotRejection; error: string };

/** The header of a stored snapshot, read before its body (which a load fetches beside the log's tail). */
export type SnapshotHeadRead =
  | { kind: "none" }
  | { kind: "head"; header: SnapshotHeader; first: Uint8Array }
  | { kind: "rejected"; reason: SnapshotRejection; error: string };

export interface SnapshotStore {
  /** Body bytes per part (each part is one KV value). */
  readonly partBytes: number;
  /** The session's snapshot, checked and decoded. Rejects only when the bucket cannot be read. */
  read(sessionId: string): Promise<SnapshotRead>;
  /** `read` in two steps: the header (one get), then the other parts, checked and decoded. */
  readHead(sessionId: string): Promise<SnapshotHeadRead>;
  readBody(head: { header: SnapshotHeader; first: Uint8Array }): Promise<SnapshotRead>;
  /**
   * Stores `encoded` for its session: the parts after the first, then the key `<sessionId>`. Parts
   * past the new count (a body that shrank) stay until the snapshot is removed; no read uses them.
   */
  write(encoded: EncodedSnapshot): Promise<void>;
  /**
   * Removes the session's snapshot: its parts, then its header, purged from the bucket's stream by
   * subject (no delete markers stay). Idempotent.
   */
  remove(sessionId: string): Promise<void>;
}

/** Largest body part: under nats-server's default 1 MiB max_payload with room for headers. */
export const DEFAULT_SNAPSHOT_PART_BYTES = 960 * 1024;

const partKey = (sessionId: string, k: number) => `${sessionId}.${k}`;

const STREAM = `KV_${KV_BUCKETS.snapshots.name}`;
const subjectOf = (key: string) => `$KV.${KV_BUCKETS.snapshots.name}.${key}`;

export function createSnapshotStore(
  kv: KV,
  jsm: JetStreamManager,
  partBytes = DEFAULT_SNAPSHOT_PART_BYTES,
): SnapshotStore {
  /** The value of `key`, or `undefined` when absent or deleted. */
  const value = async (key: string) => {
    const entry = await kv.get(key);
    return entry && entry.operation === "PUT" ? entry.value : undefined;
  };
  const readHead = async (sessionId: string): Promise<SnapshotHeadRead> => {
    const head = await value(sessionId);
    if (!head) return { kind: "none" };
    const read = readSnapshotHead(head, sessionId);
    if (!read.ok) return { kind: "rejected", reason: read.reason, error: read.error };
    return { kind: "head", header: read.header, first: read.first };
  };
  const readBody = async ({ header, first }: { header: SnapshotHeader; first: Uint8Array }): Promise<SnapshotRead> => {
    const sessionId = header.sessionId;
    const rest = await Promise.all(
      Array.from({ length: header.parts - 1 }, (_, i) => value(partKey(sessionId, i + 1))),
    );
    const missing = rest.indexOf(undefined);
    if (missing >= 0) return { kind: "rejected", reason: "corrupt", error: `part ${missing + 1} is missing` };
    const decoded = decodeSnapshotBody(header, [first, ...(rest as Uint8Array[])]);
    if (!decoded.ok) return { kind: "rejected", reason: decoded.reason, error: decoded.error };
    return { kind: "found", snapshot: decoded.snapshot, bytes: header.bytes };
  };
  return {
    partBytes,
    readHead,
    readBody,
    async read(sessionId) {
      const head = await readHead(sessionId);
      return head.kind === "head" ? readBody(head) : head;
    },
    async write(encoded) {
      const sessionId = encoded.header.sessionId;
      // A reader racing this write may see new parts under the old header: its CRC-32 refuses them.
      await Promise.all(encoded.parts.slice(1).map((part, i) => kv.put(partKey(sessionId, i + 1), part)));
      await kv.put(sessionId, encoded.parts[0] as Uint8Array);
    },
    async remove(sessionId) {
      await jsm.streams.purge(STREAM, { filter: subjectOf(`${sessionId}.>`) });
      await jsm.streams.purge(STREAM, { filter: subjectOf(sessionId) });
    },
  };
}
