// Failover time: from a worker's kill (or stop) until every lease of its role (the loop's partitions
// `loop.p.<p>`, the store's stream groups `store.g.<g>`) is held by another worker, read from KV
// `fleet_leases`.
import { KV_BUCKETS } from "@fleet/protocol";
import { LeaseValue, readKvEntries } from "@fleet/runtime";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";

/**
 * Resolves with the milliseconds since `since`, or undefined when not re-leased within `timeoutMs`
 * or before `until` settles (a paused worker that resumes may lease its partitions again itself).
 */
export async function measureFailover(
  nc: NatsConnection,
  role: "loop" | "store",
  deadWorkerId: string,
  /** How many leases the role has: P for the loop, K for the store. */
  leases: number,
  since: number,
  timeoutMs = 60_000,
  until?: Promise<unknown>,
): Promise<number | undefined> {
  let over = false;
  void until?.finally(() => {
    over = true;
  });
  while (Date.now() - since < timeoutMs && !over) {
    try {
      const kv = await new Kvm(nc).open(KV_BUCKETS.leases.name);
      const holders = (await readKvEntries(kv, role === "loop" ? "loop.p.*" : "store.g.*")).flatMap((e) => {
        const v = LeaseValue.safeParse(e.json());
        return v.success ? [v.data.workerId] : [];
      });
      if (holders.length === leases && !holders.includes(deadWorkerId)) return Date.now() - since;
    } catch {
      // NATS may be down or paused by another fault: keep polling
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return undefined;
}

/**
 * The worker holding `key` in KV `fleet_leases` now, or undefined (none, or NATS did not answer
 * within a second: a fault must not wait for a paused server).
 */
export function leaseHolder(nc: NatsConnection, key: string): Promise<string | undefined> {
  const timeout = new Promise<undefined>((r) => setTimeout(() => r(undefined), 1_000).unref());
  return Promise.race([readHolder(nc, key), timeout]);
}

async function readHolder(nc: NatsConnection, key: string): Promise<string | undefined> {
  try {
    const kv = await new Kvm(nc).open(KV_BUCKETS.leases.name);
    const entry = await kv.get(key);
    if (entry?.operation !== "PUT") return undefined;
    const v = LeaseValue.safeParse(entry.json());
    return v.success ? v.data.workerId : undefined;
  } catch {
    return undefined;
  }
}
