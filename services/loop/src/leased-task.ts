// A periodic task with one runner per tenant: the loop worker holding its lease (one key in
// `fleet_leases`, shared fairly among the live loop workers) runs a pass on acquiring it, then one
// `everyMs` after each pass ends, until it loses the lease or stops. The scheduler and the retention
// janitor are such tasks.
import { createLeaseManager, type Logger } from "@fleet/runtime";
import type { KV } from "@nats-io/kv";

export interface LeasedTask {
  start(): Promise<void>;
  /** Runs one pass now, or joins the one running: passes never overlap. Never throws. */
  run(): Promise<void>;
  /** Whether this worker holds the lease. */
  holds(): boolean;
  /** Whether a pass should go on: the lease is held and the task was not stopped. */
  active(): boolean;
  /**
   * The holder's write fence (LeaseManager.writable): true while the lease is held and renewed;
   * false once it is lost or the task stopped. Await it before each write a new holder could repeat.
   */
  writable(): Promise<boolean>;
  /** Stops the timer and releases the lease, after the pass in hand ends. */
  stop(): Promise<void>;
}

export function startLeasedTask(opts: {
  /** KV `fleet_leases`. */
  kv: KV;
  /** The lease's key, e.g. `loop.scheduler`. */
  leaseKey: string;
  workerId: string;
  ttlMs: number;
  /** Pause between the end of one pass and the start of the next. */
  everyMs: number;
  now: () => number;
  logger: Logger;
  /** One pass; it checks `active()` between steps. A rejection is handed to `onFailed`. */
  pass: () => Promise<void>;
  /** Called with the lease's epoch once it is acquired, before the first pass. */
  onAcquire?: (epoch: number) => void;
  onFailed: (err: unknown) => void;
}): LeasedTask {
  let held: { epoch: number } | undefined;
  let stopped = false;
  let running: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;

  const run = (): Promise<void> => {
    running ??= opts
      .pass()
      .catch(opts.onFailed)
      .finally(() => {
        running = undefined;
      });
    return running;
  };

  const rearm = () => {
    if (timer) clearTimeout(timer);
    if (stopped || !held) return;
    timer = setTimeout(() => void run().finally(rearm), opts.everyMs);
    timer.unref();
  };

  const lease = createLeaseManager({
    kv: opts.kv,
    role: "loop",
    partitions: 1,
    workerId: opts.workerId,
    ttlMs: opts.ttlMs,
    leaseKey: () => opts.leaseKey,
    logger: opts.logger,
    now: opts.now,
    onAcquire: (_p, epoch) => {
      held = { epoch };
      opts.onAcquire?.(epoch);
      void run().finally(rearm);
    },
    onRelease: async () => {
      held = undefined;
      if (timer) clearTimeout(timer);
      await running;
    },
  });

  return {
    start: () => lease.start(),
    run,
    holds: () => held !== undefined,
    active: () => held !== undefined && !stopped,
    async writable() {
      if (!held || stopped) return false;
      return lease.writable(0, held.epoch);
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await lease.stop();
    },
  };
}
