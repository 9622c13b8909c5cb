// Command-line options of `npm run chaos`.
import { FAULT_KINDS, type FaultKind } from "./fault-schedule.js";

/** The event log's partitions in every chaos run (FLEET_PARTITIONS); stream groups may not exceed them. */
export const CHAOS_PARTITIONS = 16;

/**
 * Fault kinds drawn by default: every kind, but on a cluster not `storage_full`. Filling the nodes of
 * a nats-server 2.9 cluster unevenly leaves a replica of an event stream renumbered against its
 * leader (docs/reliability.md, "Replicas that disagree"), which no reader can detect; `--faults`
 * still runs it on a cluster.
 */
export const defaultFaultKinds = (cluster: boolean): FaultKind[] =>
  FAULT_KINDS.filter((k) => !(cluster && k === "storage_full"));

export interface ChaosOptions {
  seed: number;
  durationMs: number;
  sessions: number;
  cluster: boolean;
  /** Stream groups K of the event log (FLEET_STREAM_GROUPS); 3 under `--cluster`, else 1, unless given. */
  groups: number;
  kinds: FaultKind[];
}

export const USAGE = `usage: npm run chaos -- [--seed N] [--duration SECONDS] [--sessions N] [--cluster] [--groups K] [--faults kind,kind]
  --seed       seed of the fault schedule (default: random, printed)
  --duration   seconds of faults and load (default 120)
  --sessions   sessions sending prompts (default 24)
  --cluster    run on a 3-node NATS cluster with FLEET_STREAM_REPLICAS=3
  --groups     stream groups of the event log, FLEET_STREAM_GROUPS (default 3 with --cluster, else 1)
  --faults     fault kinds to draw from (default all; with --cluster all but storage_full): ${FAULT_KINDS.join(",")}`;

/** Parses argv (without node and the script); an error names the bad option. */
export function parseOptions(argv: readonly string[], randomSeed: number): ChaosOptions | { error: string } {
  const o: Omit<ChaosOptions, "groups" | "kinds"> = {
    seed: randomSeed,
    durationMs: 120_000,
    sessions: 24,
    cluster: false,
  };
  let groups: number | undefined;
  let kinds: FaultKind[] | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = argv[i + 1];
    const int = (min: number) => {
      const n = Number(value);
      i++;
      return Number.isInteger(n) && n >= min ? n : undefined;
    };
    if (arg === "--cluster") o.cluster = true;
    else if (arg === "--seed") {
      const n = int(0);
      if (n === undefined) return { error: `--seed needs a non-negative integer, got ${value}` };
      o.seed = n;
    } else if (arg === "--duration") {
      const n = int(10);
      if (n === undefined) return { error: `--duration needs seconds >= 10, got ${value}` };
      o.durationMs = n * 1000;
    } else if (arg === "--sessions") {
      const n = int(1);
      if (n === undefined) return { error: `--sessions needs a positive integer, got ${value}` };
      o.sessions = n;
    } else if (arg === "--groups") {
      const n = int(1);
      if (n === undefined || n > CHAOS_PARTITIONS)
        return { error: `--groups needs an integer from 1 to ${CHAOS_PARTITIONS} (the partitions), got ${value}` };
      groups = n;
    } else if (arg === "--faults") {
      i++;
      const given = (value ?? "").split(",").filter(Boolean);
      const bad = given.filter((k) => !(FAULT_KINDS as readonly string[]).includes(k));
      if (bad.length > 0 || given.length === 0)
        return { error: `--faults: unknown kind(s) ${bad.join(",") || "(none)"}` };
      kinds = given as FaultKind[];
    } else return { error: `unknown option ${arg}` };
  }
  return { ...o, groups: groups ?? (o.cluster ? 3 : 1), kinds: kinds ?? defaultFaultKinds(o.cluster) };
}
