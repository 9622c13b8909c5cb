import { leaseKey } from "@fleet/protocol";
import type { KV } from "@nats-io/kv";
import type { Logger } from "pino";
import { z } from "zod";
import { readKvEntries } from "./kv-entries.js";
import { WRONG_LAST_SEQUENCE } from "./stream-publisher.js";

export const isWrongLastSequence = (err: unknown) =>
  (err as { code?: unknown } | undefined)?.code === WRONG_LAST_SEQUENCE ||
  /wrong last sequence/i.test((err as Error | undefined)?.message ?? "");

export const LeaseValue = z.object({ workerId: z.string(), epoch: z.number().int().nonnegative() });
export type LeaseValue = z.infer<typeof LeaseValue>;

export type ReleaseReason = "rebalance" | "lost" | "shutdown";

export interface LeaseManagerOptions {
  /** KV `fleet_leases`; its bucket TTL must equal `ttlMs`, so dead holders expire. */
  kv: KV;
  role: "loop" | "store";
  partitions: number;
  workerId: string;
  ttlMs: number;
  /** Called once a partition is held; `epoch` grows with every claim of that partition. */
  onAcquire: (partition: number, epoch: number) => Promise<void> | void;
  /** Called before a rebalance release (awaited: drain first) and after a lease was lost or on shutdown. */
  onRelease: (partition: number, reason: ReleaseReason) => Promise<void> | void;
  logger?: Pick<Logger, "info" | "warn">;
  now?: () => number;
  /**
   * The key of a lease (default `<role>.p.<partition>`): another name gives a separate set of leases
   * shared fairly among the same live workers (the loop's janitor lease `loop.janitor`).
   */
  leaseKey?: (partition: number) => string;
}

export interface HeldLease {
  partition: number;
  epoch: number;
  revision: number;
  renewedAt: number;
}

export interface LeaseManager {
  start(): Promise<void>;
  /** One renew/rebalance pass; `start` runs it every ttl/3. Passes never overlap. */
  tick(): Promise<void>;
  /** Releases every lease (after `onRelease(p, "shutdown")`) and stops ticking. */
  stop(): Promise<void>;
  held(): ReadonlyMap<number, HeldLease>;
  liveWorkers(): Promise<string[]>;
  /**
   * The write fence of a lease holder: true while `partition` is held at `epoch` and was renewed
   * within `ttl − ttl/6` (synchronously, the common case); otherwise it waits for a renewal and
   * resolves true once one lands, false once the lease is no longer held at `epoch`. A holder that
   * was paused or starved past its lease therefore never writes on a lease the server may have
   * expired: everything it wrote was stored before a new holder could claim the partition.
   */
  writable(partition: number, epoch: number): true | Promise<boolean>;
}

/**
 * Partition leases: claimed with `create`, renewed with `update(revision)`, released with a
 * revision-guarded delete. Each worker aims at a fair share of the partitions among the live workers
 * of its role (presence keys `<role>.w.<workerId>` expire with the bucket TTL). The share is
 * `floor(P/n)`, plus one for the first `P mod n` workers in id order.
 */
export function createLeaseManager(opts: LeaseManagerOptions): LeaseManager {
  const now = opts.now ?? Date.now;
  const held = new Map<number, HeldLease>();
  const presenceKey = `${opts.role}.w.${opts.workerId}`;
  const keyOf = opts.leaseKey ?? ((partition: number) => leaseKey(opts.role, partition));
  let timer: NodeJS.Timeout | undefined;
  let renewTimer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;

  const value = (epoch: number) => JSON.stringify({ workerId: opts.workerId, epoch } satisfies LeaseValue);

  async function liveWorkers(): Promise<string[]> {
    const prefix = `${opts.role}.w.`;
    const entries = await readKvEntries(opts.kv, `${prefix}*`);
    const ids = entries.map((e) => e.key.slice(prefix.length));
    // A presence written more than ttl/2 before ours (server timestamps, so no clock skew) belongs to
    // a worker that may be dead: its key outlives the last lease it renewed by up to the pass interval.
    // It counts only while it holds a lease; otherwise its share would stay unclaimed for one more
    // pass after its leases expired.
    const ours = entries.find((e) => e.key === presenceKey)?.created.getTime();
    const stale =
      ours === undefined
        ? []
        : entries.filter((e) => e.key !== presenceKey && ours - e.created.getTime() > opts.ttlMs / 2);
    if (stale.length > 0) {
      const holders = await leaseHolders();
      for (const e of stale) {
        const id = e.key.slice(prefix.length);
        if (!holders.has(id)) ids.splice(ids.indexOf(id), 1);
      }
    }
    if (!ids.includes(opts.workerId)) ids.push(opts.workerId);
    return ids.sort();
  }

  /** The workers holding a lease now (one get per partition; asked only when a presence looks stale). */
  async function leaseHolders(): Promise<Set<string>> {
    const keys = Array.from({ length: opts.partitions }, (_, p) => keyOf(p));
    const entries = await Promise.all(keys.map((k) => opts.kv.get(k).catch(() => null)));
    const out = new Set<string>();
    for (const e of entries) {
      if (e?.operation !== "PUT") continue;
      const lease = LeaseValue.safeParse(e.json());
      if (lease.success) out.add(lease.data.workerId);
    }
    return out;
  }

  /**
   * Lost partitions whose `onRelease` is still running. Renewals never wait for it (a release waits
   * for the partition's commands in hand, which may wait for the write fence, which waits for
   * renewals), and a partition is not claimed again before its release finished.
   */
  const releasing = new Map<number, Promise<void>>();
  /** Partitions whose renewals fail since the last one that landed: logged once per outage, not per renewal. */
  const renewFailing = new Set<number>();
  function lose(lease: HeldLease, why: string) {
    if (held.get(lease.partition) !== lease) return;
    held.delete(lease.partition);
    renewFailing.delete(lease.partition);
    opts.logger?.warn(
      { evt: "lease_lost", partition: lease.partition, key: keyOf(lease.partition), why },
      "partition lease lost",
    );
    const done = (async () => {
      try {
        await opts.onRelease(lease.partition, "lost");
      } catch (err) {
        opts.logger?.warn(
          { evt: "lease_release_failed", partition: lease.partition, key: keyOf(lease.partition), err },
          "release failed",
        );
      } finally {
        releasing.delete(lease.partition);
      }
    })();
    releasing.set(lease.partition, done);
  }

  // Leases are renewed concurrently: one slow KV round trip must not push the others past the TTL.
  // `renewedAt` is when the update was sent: the server stored it later, so the entry outlives it by
  // at least the TTL. Only the server decides a loss: an update guarded by our revision succeeds only
  // while nobody else could have claimed the key, so a renewal that is late on our side (a stalled
  // event loop) but lands before the server expired the entry keeps the lease. A transient failure
  // (timeout, no responders, an election) is retried at the next renewal; once the TTL has passed
  // without a confirmed renewal, any failure loses the lease.
  async function renewAll() {
    await Promise.all(
      [...held.values()].map(async (lease) => {
        const key = keyOf(lease.partition);
        const sentAt = now();
        try {
          const revision = await opts.kv.update(key, value(lease.epoch), lease.revision);
          // Released or lost meanwhile: nothing to record.
          if (held.get(lease.partition) !== lease) return;
          held.set(lease.partition, { ...lease, revision, renewedAt: sentAt });
          if (renewFailing.delete(lease.partition)) {
            opts.logger?.info(
              { evt: "lease_renew_resumed", partition: lease.partition, key: keyOf(lease.partition) },
              "renewals land again",
            );
          }
        } catch (err) {
          const message = (err as Error).message;
          if (isWrongLastSequence(err)) lose(lease, message);
          else if (now() - lease.renewedAt > opts.ttlMs) lose(lease, `not renewed within the TTL (${message})`);
          else if (!renewFailing.has(lease.partition)) {
            renewFailing.add(lease.partition);
            opts.logger?.warn(
              { evt: "lease_renew_retry", partition: lease.partition, key: keyOf(lease.partition), err },
              "renewal failed; retrying (logged once until one lands)",
            );
          }
        }
      }),
    );
  }

  /**
   * One renewal of every held lease; concurrent callers share the one in flight, so a lease never has
   * two updates of the same revision outstanding. Renewals run on their own timer as well as in every
   * pass: a slow pass (claims, listing the workers) must not delay them past the TTL.
   */
  let renewing: Promise<void> | undefined;
  function renew(): Promise<void> {
    renewing ??= renewAll()
      .catch((err) => opts.logger?.warn({ evt: "lease_renew_failed", err }, "lease renewal failed"))
      .finally(() => {
        renewing = undefined;
      });
    return renewing;
  }

  const writeMarginMs = Math.floor(opts.ttlMs / 6);
  /** The write fence's test: held at `epoch` and renewed within ttl − ttl/6 of this clock. */
  const fresh = (lease: HeldLease | undefined, epoch: number): lease is HeldLease =>
    lease?.epoch === epoch && now() < lease.renewedAt + opts.ttlMs - writeMarginMs;
  // Polls instead of awaiting a renewal: see `releasing`. A renewal is asked for at most every 250 ms
  // (renewAll loses the lease once the TTL passed without one).
  let renewAskedAt = 0;
  async function waitWritable(partition: number, epoch: number): Promise<boolean> {
    for (;;) {
      const lease = held.get(partition);
      if (lease?.epoch !== epoch || stopped) return false;
      if (fresh(lease, epoch)) return true;
      if (now() - renewAskedAt >= 250) {
        renewAskedAt = now();
        void renew();
      }
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  async function release(partition: number, reason: ReleaseReason) {
    // A renewal in flight would move the revision the delete below is guarded by.
    if (renewing) await renewing;
    const lease = held.get(partition);
    if (!lease) return;
    await opts.onRelease(partition, reason);
    held.delete(partition);
    try {
      await opts.kv.delete(keyOf(partition), { previousSeq: lease.revision });
    } catch {
      // Already expired or taken: nothing of ours to delete.
    }
    opts.logger?.info({ evt: "lease_released", partition, key: keyOf(partition), reason }, "partition lease released");
  }

  async function claim(partition: number): Promise<boolean> {
    const key = keyOf(partition);
    let revision: number;
    try {
      revision = await opts.kv.create(key, value(0));
      // The create revision is unique and grows with every claim: it is the epoch.
      const sentAt = now();
      const epochRevision = await opts.kv.update(key, value(revision), revision);
      held.set(partition, { partition, epoch: revision, revision: epochRevision, renewedAt: sentAt });
    } catch {
      return false;
    }
    opts.logger?.info(
      { evt: "lease_acquired", partition, key: keyOf(partition), epoch: revision },
      "partition lease acquired",
    );
    try {
      await opts.onAcquire(partition, revision);
      return true;
    } catch (err) {
      // A lease held without serving its partition would strand its work: hand it back, claim it later.
      opts.logger?.warn(
        { evt: "lease_serve_failed", partition, key: keyOf(partition), err },
        "could not serve a claimed partition; released",
      );
      await release(partition, "lost");
      return false;
    }
  }

  async function pass() {
    // Renewals first and not behind the presence write: under load every KV round trip is slow.
    await Promise.all([renew(), opts.kv.put(presenceKey, JSON.stringify({ workerId: opts.workerId, ts: now() }))]);
    const workers = await liveWorkers();
    const n = workers.length;
    const rank = workers.indexOf(opts.workerId);
    const target = Math.floor(opts.partitions / n) + (rank < opts.partitions % n ? 1 : 0);
    if (held.size > target) {
      const extras = [...held.keys()].sort((a, b) => b - a).slice(0, held.size - target);
      for (const p of extras) await release(p, "rebalance");
      return;
    }
    const start = Math.floor((rank * opts.partitions) / n);
    const claimUntil = now() + opts.ttlMs / 3;
    for (let i = 0; i < opts.partitions && held.size < target && !stopped; i++) {
      // A long claim phase (slow KV under load) must not delay the next pass's renewals past the TTL.
      if (now() > claimUntil) break;
      const p = (start + i) % opts.partitions;
      if (!held.has(p) && !releasing.has(p)) await claim(p);
    }
  }

  /** A pass failed since the last one that completed (e.g. presence writes refused by a full store): logged once. */
  let passFailing = false;
  async function tick() {
    if (stopped) return;
    if (running) return running;
    running = pass()
      .then(() => {
        if (passFailing) opts.logger?.info({ evt: "lease_tick_resumed" }, "lease passes complete again");
        passFailing = false;
      })
      .catch((err) => {
        if (!passFailing)
          opts.logger?.warn({ evt: "lease_tick_failed", err }, "lease pass failed (logged once until one completes)");
        passFailing = true;
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  }

  return {
    async start() {
      stopped = false;
      await tick();
      timer = setInterval(() => void tick(), Math.max(50, Math.floor(opts.ttlMs / 3)));
      renewTimer = setInterval(
        () => {
          if (!stopped) void renew();
        },
        Math.max(50, Math.floor(opts.ttlMs / 4)),
      );
    },
    tick,
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      if (renewTimer) clearInterval(renewTimer);
      if (running) await running;
      if (renewing) await renewing;
      for (const p of [...held.keys()]) await release(p, "shutdown");
      await Promise.all(releasing.values());
      try {
        await opts.kv.delete(presenceKey);
      } catch {
        // Presence expires with the TTL anyway.
      }
    },
    held: () => held,
    liveWorkers,
    writable(partition, epoch) {
      return fresh(held.get(partition), epoch) ? true : waitWritable(partition, epoch);
    },
  };
}
