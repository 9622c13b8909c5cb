import type { KV } from "@nats-io/kv";
import { readKvEntries } from "./kv-entries.js";

export interface KvFollower {
  /** Resolves once every value written before the call is delivered (or on `stop`). */
  ready: Promise<void>;
  stop(): void;
}

export interface FollowKvOptions {
  /**
   * The connection's status events (`nc.status()`). After every `reconnect` the watch is made again:
   * a watch whose consumer lived on a cluster node that died can stay silent for good, neither
   * ending nor failing.
   */
  statuses?: () => AsyncIterable<{ type: string }>;
  /** Wait before making a watch again after it ended or could not be made (default 500 ms). */
  retryMs?: number;
  /**
   * Also reads the keys every `resyncMs` and delivers what is newer than delivered: for a small set of
   * keys whose freshness matters (runner presence), in case a watch goes silent without a reconnect.
   */
  resyncMs?: number;
}

/**
 * Follows the keys of a KV bucket (those matching `filter`, or all): `onEntry` gets each key's
 * current value (with its revision), then every later put or delete/purge (`operation` is `PUT`, `DEL` or `PURGE`), in
 * the order the bucket stored them. The watch opens first and a snapshot of the keys follows, so
 * nothing written before `ready` is missed; a value is delivered once, and never after a newer one
 * of its key. A watch that ends, fails, or outlives a reconnect is made again; its first values
 * (each key's last message, a delete marker included) catch up on what changed meanwhile. A key that
 * expired by age meanwhile is not reported: nats-server 2.9 tells no watcher of expiries.
 */
export function followKv(
  kv: KV,
  filter: string | undefined,
  onEntry: (key: string, operation: string, value: Uint8Array, revision: number) => void,
  opts: FollowKvOptions = {},
): KvFollower {
  /** Per key: the revision last delivered. */
  const revisions = new Map<string, number>();
  let stopped = false;
  let current: { stop(): void } | undefined;
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });

  const deliver = (key: string, operation: string, value: Uint8Array, revision: number) => {
    if ((revisions.get(key) ?? 0) >= revision) return;
    revisions.set(key, revision);
    onEntry(key, operation, value, revision);
  };

  /** The snapshot after a watch opened (the watch's own first values may still be in flight). */
  async function snapshot() {
    for (const entry of await readKvEntries(kv, filter))
      deliver(entry.key, entry.operation, entry.value, entry.revision);
  }

  /**
   * The first snapshot, retried until it succeeds: `ready` means the contents are known. A view made
   * ready on a failed read would answer "nothing there" (no live runner, no tool) while the bus is
   * down or electing a leader.
   */
  let firstSnapshotStarted = false;
  const retryMs = opts.retryMs ?? 500;
  async function snapshotUntilRead() {
    while (!stopped) {
      try {
        await snapshot();
        markReady();
        return;
      } catch {
        await new Promise((r) => setTimeout(r, retryMs));
      }
    }
  }

  async function follow() {
    while (!stopped) {
      try {
        const iter = await kv.watch(filter === undefined ? {} : { key: filter });
        current = iter;
        if (stopped) iter.stop();
        // After the watch opened, so nothing written in between is missed.
        if (!firstSnapshotStarted) {
          firstSnapshotStarted = true;
          void snapshotUntilRead();
        } else void snapshot().catch(() => undefined);
        for await (const entry of iter) deliver(entry.key, entry.operation, entry.value, entry.revision);
      } catch {
        // The watch could not be made or failed: made again below.
      }
      current = undefined;
      if (!stopped) await new Promise((r) => setTimeout(r, retryMs));
    }
  }
  void follow();

  const resync = opts.resyncMs ? setInterval(() => void snapshot().catch(() => undefined), opts.resyncMs) : undefined;
  resync?.unref();

  const statuses = opts.statuses?.()[Symbol.asyncIterator]();
  if (statuses) {
    void (async () => {
      for (let next = await statuses.next(); !next.done && !stopped; next = await statuses.next()) {
        if (next.value.type === "reconnect") current?.stop();
      }
    })().catch(() => undefined);
  }

  return {
    ready,
    stop() {
      stopped = true;
      markReady();
      if (resync) clearInterval(resync);
      current?.stop();
      void statuses?.return?.();
    },
  };
}
