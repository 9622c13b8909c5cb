import { Counter, Histogram, type Registry } from "prom-client";

/** Metrics of session loads and snapshots (names are part of the ops contract, PROTOCOL change 42). */
export function createSnapshotMetrics(registry: Registry) {
  return {
    loads: new Counter({
      name: "fleet_loop_session_loads_total",
      help: "Sessions loaded, by what the load started from (snapshot, or the log from its first event)",
      labelNames: ["from"],
      registers: [registry],
    }),
    loadEvents: new Histogram({
      name: "fleet_loop_session_load_events",
      help: "Events a load read from the log (after the snapshot, when one was used)",
      buckets: [0, 10, 100, 1_000, 10_000, 100_000],
      registers: [registry],
    }),
    rejected: new Counter({
      name: "fleet_loop_snapshots_rejected_total",
      help: "Stored snapshots not used (the load folded the whole log), by reason",
      labelNames: ["reason"],
      registers: [registry],
    }),
    written: new Counter({
      name: "fleet_loop_snapshots_written_total",
      help: "Snapshots written, by outcome (ok, failed)",
      labelNames: ["outcome"],
      registers: [registry],
    }),
    bytes: new Histogram({
      name: "fleet_loop_snapshot_bytes",
      help: "Body size of snapshots written",
      buckets: [1e3, 1e4, 1e5, 1e6, 1e7, 1e8],
      registers: [registry],
    }),
  };
}
export type SnapshotMetrics = ReturnType<typeof createSnapshotMetrics>;
