// Applies a fault schedule to the running system, one fault after another, at the planned times.
import { sendRedisCommand } from "@fleet/testkit";
import type { NatsConnection } from "@nats-io/transport-node";
import { fillStorage } from "../support/storage-filler.js";
import { leaseHolder, measureFailover } from "./failover-watch.js";
import { type Fault, formatFault } from "./fault-schedule.js";
import type { ServiceSlot } from "./service-slot.js";
import type { System } from "./system.js";

export interface AppliedFault {
  fault: Fault;
  /** Milliseconds after the run started. */
  startedMs: number;
  error?: string;
  /** A loop fault struck the worker that held the scheduler lease `loop.scheduler`. */
  schedulerHolder?: boolean;
}

export interface FailoverSample {
  role: "loop" | "store";
  /** A kill, or a SIGSTOP past the lease (then the measure ends at SIGCONT). */
  cause: "kill" | "pause";
  ms: number | undefined;
}

export interface FaultRun {
  applied: AppliedFault[];
  failovers: Promise<FailoverSample>[];
}

export async function runFaults(
  system: System,
  nc: NatsConnection,
  schedule: readonly Fault[],
  opts: { startedAt: number; partitions: number; groups: number; log: (line: string) => void },
): Promise<FaultRun> {
  const run: FaultRun = { applied: [], failovers: [] };
  // A fault's recovery (restart, SIGCONT) runs in the background so the schedule keeps its times; the
  // next fault on the same process waits for it.
  const recovering = new Map<string, Promise<void>>();
  let holderKilled = false;
  for (const planned of schedule) {
    const wait = opts.startedAt + planned.atMs - Date.now();
    if (wait > 0) await sleep(wait);
    // The first loop kill strikes whichever worker holds the scheduler lease, so that every run with
    // a loop kill kills the scheduler at least once.
    let fault = planned;
    if (fault.kind === "kill_loop" && !holderKilled) {
      const holder = await leaseHolder(nc, SCHEDULER_LEASE_KEY);
      const held = system.loops.findIndex((l) => l.workerId() === holder);
      if (held >= 0) {
        holderKilled = true;
        if (held !== fault.target) {
          opts.log(`  kill_loop[${fault.target}] retargeted to loop-${held}, the scheduler's holder`);
          fault = { ...fault, target: held };
        }
      }
    }
    const key = targetOf(fault);
    await recovering.get(key);
    const applied: AppliedFault = { fault, startedMs: Date.now() - opts.startedAt };
    run.applied.push(applied);
    opts.log(`fault ${formatFault(fault)} (at t+${(applied.startedMs / 1000).toFixed(1)}s)`);
    const failed = (err: unknown) => {
      applied.error = String(err);
      opts.log(`! fault ${fault.kind} failed: ${String(err).slice(0, 300)}`);
    };
    try {
      if (fault.kind === "kill_loop" || fault.kind === "pause_loop") {
        const holder = await leaseHolder(nc, SCHEDULER_LEASE_KEY);
        applied.schedulerHolder = holder !== undefined && holder === system.loops[fault.target]?.workerId();
        if (applied.schedulerHolder) opts.log(`  ${holder} holds ${SCHEDULER_LEASE_KEY}`);
      }
      const { recovery } = await apply(system, nc, fault, opts, run.failovers, opts.log);
      recovering.set(key, recovery.catch(failed));
    } catch (err) {
      failed(err);
    }
  }
  await Promise.all(recovering.values());
  return run;
}

/** The loop workers' scheduler lease in KV `fleet_leases` (PROTOCOL "Leases and presence"). */
const SCHEDULER_LEASE_KEY = "loop.scheduler";

/** The process a fault acts on. */
function targetOf(f: Fault): string {
  if (f.kind === "kill_loop" || f.kind === "pause_loop") return `loop-${f.target}`;
  if (f.kind === "kill_store") return `store-${f.target}`;
  if (f.kind === "kill_runner") return `runner-${f.target}`;
  if (f.kind === "kill_gateway") return `gateway-${f.target}`;
  if (f.kind === "pause_nats" || f.kind === "kill_nats") return `nats-${f.target}`;
  if (f.kind === "storage_full") return "storage";
  return "redis";
}

/** Strikes at once and resolves with the recovery (restart, SIGCONT), which runs on its own. */
async function apply(
  system: System,
  nc: NatsConnection,
  fault: Fault,
  topology: { partitions: number; groups: number },
  failovers: Promise<FailoverSample>[],
  log: (line: string) => void,
): Promise<{ recovery: Promise<void> }> {
  const watch = (
    role: "loop" | "store",
    slot: ServiceSlot,
    cause: FailoverSample["cause"],
    until?: Promise<unknown>,
  ) => {
    const since = Date.now();
    const id = slot.workerId();
    // The loop leases each partition, the store each stream group.
    const leases = role === "loop" ? topology.partitions : topology.groups;
    const measured = measureFailover(nc, role, id, leases, since, 60_000, until);
    failovers.push(measured.then((ms) => ({ role, cause, ms })));
  };
  const later = (then: () => Promise<void> | void) => ({
    recovery: sleep(fault.holdMs).then(then),
  });
  const none = { recovery: Promise.resolve() };
  const killAndRestart = async (slot: ServiceSlot | undefined, role?: "loop" | "store") => {
    if (!slot) return none;
    if (role) watch(role, slot, "kill");
    await slot.kill();
    return later(() => slot.start());
  };
  switch (fault.kind) {
    case "kill_loop":
      return killAndRestart(system.loops[fault.target], "loop");
    case "kill_store":
      return killAndRestart(system.stores[fault.target], "store");
    case "kill_runner":
      return killAndRestart(system.runners[fault.target]);
    case "kill_gateway":
      return killAndRestart(system.gateways[fault.target]);
    case "pause_loop": {
      const slot = system.loops[fault.target];
      if (!slot) return none;
      slot.pause();
      const resumed = later(() => slot.resume());
      watch("loop", slot, "pause", resumed.recovery);
      return resumed;
    }
    case "pause_nats": {
      const pid = system.nats.pid(fault.target);
      if (pid === undefined) return none;
      process.kill(pid, "SIGSTOP");
      return later(() => {
        process.kill(pid, "SIGCONT");
      });
    }
    case "kill_nats":
      await system.nats.kill(fault.target);
      return later(() => system.nats.restart(fault.target));
    case "redis_flushall":
      await sendRedisCommand(system.redis.port, ["FLUSHALL"]);
      return none;
    case "redis_restart":
      if (system.redis.pid !== undefined) process.kill(system.redis.pid, "SIGKILL");
      return later(() => system.redis.restart());
    case "storage_full": {
      // Every node's storage (the filler has a replica on each): every write to a file stream is refused.
      const started = Date.now();
      const fill = await fillStorage(nc, { replicas: system.nats.nodes });
      log(`  storage filled: ${Math.round(fill.bytes / 1024 ** 2)} MB in ${Date.now() - started} ms`);
      return later(async () => {
        const releasing = Date.now();
        await fill.release();
        log(`  storage released in ${Date.now() - releasing} ms`);
      });
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
