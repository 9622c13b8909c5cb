// The fault schedule: a pure function of the seed and the run's settings, printed so a run can be repeated.
import { createPrng } from "./prng.js";

export const FAULT_KINDS = [
  "kill_loop",
  "kill_runner",
  "kill_store",
  "pause_nats",
  "kill_nats",
  "redis_flushall",
  "redis_restart",
  "pause_loop",
  "kill_gateway",
  "storage_full",
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/**
 * One planned fault. `target` picks the instance (0 or 1; the cluster node for NATS faults).
 * `holdMs`: for kills, the time until the restart; for pauses, the time until SIGCONT; for
 * `storage_full`, how long the server's storage stays full before the space is given back.
 */
export interface Fault {
  atMs: number;
  kind: FaultKind;
  target: number;
  holdMs: number;
}

export interface ScheduleSettings {
  seed: number;
  durationMs: number;
  kinds: readonly FaultKind[];
  /** The loop's lease TTL: `pause_loop` holds a worker stopped past it. */
  leaseTtlMs: number;
  /** Instances a target is drawn from (NATS: cluster nodes, else 1). */
  natsNodes: number;
  /** Faults start after this and stop `quietMs` before the end (default 5 s each). */
  warmupMs?: number;
  quietMs?: number;
  /** Gap between faults, drawn uniformly (default 3–9 s: about 20 faults in 120 s). */
  minGapMs?: number;
  maxGapMs?: number;
}

/** Process kills and pauses weigh more than the rarer, heavier NATS and Redis faults. */
const WEIGHTS: Record<FaultKind, number> = {
  kill_loop: 3,
  kill_runner: 2,
  kill_store: 2,
  pause_nats: 1,
  kill_nats: 1,
  redis_flushall: 1,
  redis_restart: 1,
  pause_loop: 2,
  kill_gateway: 1,
  storage_full: 1,
};

export function buildFaultSchedule(s: ScheduleSettings): Fault[] {
  const rng = createPrng(s.seed);
  const faults: Fault[] = [];
  const end = s.durationMs - (s.quietMs ?? 5_000);
  if (s.kinds.length === 0) return faults;
  for (let at = s.warmupMs ?? 5_000; at < end; at += rng.int(s.minGapMs ?? 3_000, s.maxGapMs ?? 9_000)) {
    const kind = rng.pick(s.kinds, (k) => WEIGHTS[k]);
    const nats = kind === "pause_nats" || kind === "kill_nats";
    const target = nats ? rng.int(0, s.natsNodes - 1) : rng.int(0, 1);
    faults.push({ atMs: at, kind, target, holdMs: holdFor(kind, rng.int(0, 1000) / 1000, s.leaseTtlMs) });
  }
  return faults;
}

function holdFor(kind: FaultKind, r: number, leaseTtlMs: number): number {
  switch (kind) {
    case "kill_loop":
    case "kill_runner":
    case "kill_store":
    case "kill_gateway":
    case "kill_nats":
    case "redis_restart":
      return Math.round(r * 3_000);
    case "pause_nats":
      return 1_000 + Math.round(r * 2_000);
    case "pause_loop":
      return leaseTtlMs + 1_000 + Math.round(r * 2_000);
    case "redis_flushall":
      return 0;
    case "storage_full":
      // Half of them shorter than the lease (the owner keeps it and retries), half longer (it is lost
      // and taken again once space is back).
      return r < 0.5
        ? Math.round(Math.min(leaseTtlMs - 500, 1_000 + r * 3_000))
        : Math.round(5_000 + (r - 0.5) * 30_000);
  }
}

export function formatFault(f: Fault): string {
  return `t+${(f.atMs / 1000).toFixed(1)}s ${f.kind}[${f.target}] hold ${f.holdMs} ms`;
}
