import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** The store's Prometheus metrics. Lag = a group stream's last sequence minus the applied sequence. */
export function createStoreMetrics(registry: Registry) {
  return {
    lag: new Gauge({
      name: "fleet_store_lag",
      help: "Stream sequences between the last event of a held stream group and the last one applied",
      labelNames: ["group"],
      registers: [registry],
    }),
    pending: new Gauge({
      name: "fleet_store_pending_events",
      help: "Events of a held stream group not yet applied (undelivered plus unacknowledged)",
      labelNames: ["group"],
      registers: [registry],
    }),
    loopDelay: new Gauge({
      name: "fleet_store_event_loop_delay_p99_seconds",
      help: "p99 event-loop delay over the last interval (lease renewals and queries wait this long)",
      registers: [registry],
    }),
    groups: new Gauge({
      name: "fleet_store_groups_held",
      help: "Stream groups this instance projects",
      registers: [registry],
    }),
    applied: new Counter({
      name: "fleet_store_events_applied_total",
      help: "Events applied to Redis",
      registers: [registry],
    }),
    invalid: new Counter({
      name: "fleet_store_invalid_events_total",
      help: "Events that could not be decoded (applied as no-ops that advance lastSeq)",
      registers: [registry],
    }),
    gapRepairs: new Counter({
      name: "fleet_store_gap_repairs_total",
      help: "Times a session's missing events were read back from the stream",
      registers: [registry],
    }),
    queries: new Histogram({
      name: "fleet_store_query_seconds",
      help: "Query latency by op and outcome",
      labelNames: ["op", "ok"],
      buckets: [0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5, 30],
      registers: [registry],
    }),
  };
}
export type StoreMetrics = ReturnType<typeof createStoreMetrics>;
