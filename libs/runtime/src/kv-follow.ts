import type { KV } from "@nats-io/kv";
import { readKvEntries } from "./kv-entries.js";

export interface KvFollower {
  /** Resolves once every value written before the call is delivered (or reading them failed). */
  ready: Promise<void>;
  stop(): void;
}

/**
 * Follows the keys of a KV bucket (those matching `filter`, or all): `onEntry` gets each key's
 * current value, then every later put or delete/purge (`operation` is `PUT`, `DEL` or `PURGE`), in
 * the order the bucket stored them. The watch opens first and a snapshot of the keys follows, so
 * nothing written before `ready` is missed; a key the watch already delivered is not read again.
 */
export function followKv(
  kv: KV,
  filter: string | undefined,
  onEntry: (key: string, operation: string, value: Uint8Array) => void,
): KvFollower {
  const delivered = new Set<string>();
  let stopped = false;
  let stopWatch: (() => void) | undefined;
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });

  void (async () => {
    const iter = await kv.watch(filter === undefined ? {} : { key: filter });
    stopWatch = () => iter.stop();
    void (async () => {
      for (const entry of await readKvEntries(kv, filter)) {
        if (delivered.has(entry.key)) continue;
        delivered.add(entry.key);
        onEntry(entry.key, entry.operation, entry.value);
      }
    })()
      .catch(() => undefined)
      .finally(() => markReady());
    if (stopped) iter.stop();
    for await (const entry of iter) {
      delivered.add(entry.key);
      onEntry(entry.key, entry.operation, entry.value);
    }
  })().catch(() => markReady());

  return {
    ready,
    stop() {
      stopped = true;
      stopWatch?.();
    },
  };
}
