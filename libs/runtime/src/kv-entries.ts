import { Bucket, type KV, type KvEntry } from "@nats-io/kv";

/**
 * The current entries of `kv` whose key matches `filter` (a KV key filter, `*` and `>` allowed) and
 * whose latest operation is a PUT, in key order: one stream-info request for the bucket's subjects,
 * then one get per key, all in flight at once.
 *
 * Use it instead of nats.js `kv.keys()`. That one counts the pending keys when it creates its
 * consumer and then waits for the last of them, so a key that ages out (bucket TTL) in between
 * leaves it waiting for the consumer's 30 s idle heartbeat; a lease holder would lose its leases.
 * A key that ages out here is simply absent.
 */
export async function readKvEntries(kv: KV, filter = ">"): Promise<KvEntry[]> {
  if (!(kv instanceof Bucket)) throw new TypeError("readKvEntries needs a bucket opened through @nats-io/kv Kvm");
  const info = await kv.jsm.streams.info(kv.stream, { subjects_filter: kv.fullKeyName(kv.encodeKey(filter)) });
  const subjects = Object.keys((info.state.subjects ?? {}) as Record<string, number>).sort();
  const entries = await Promise.all(subjects.map((s) => kv.get(kv.decodeKey(s.substring(kv.prefixLen)))));
  return entries.filter((e): e is KvEntry => e !== null && e.operation === "PUT");
}
