import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** The loop's Prometheus metrics (names are part of the ops contract). */
export function createLoopMetrics(registry: Registry) {
  return {
    activeRuns: new Gauge({ name: "fleet_loop_active_runs", help: "Runs in progress", registers: [registry] }),
    eventsAppended: new Counter({
      name: "fleet_loop_events_appended_total",
      help: "Events appended to FLEET_EVENTS",
      labelNames: ["type"],
      registers: [registry],
    }),
    appendLatency: new Histogram({
      name: "fleet_loop_append_latency_seconds",
      help: "Publish-to-ack latency of event appends",
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1],
      registers: [registry],
    }),
    timeToFirstToken: new Histogram({
      name: "fleet_loop_llm_time_to_first_token_seconds",
      help: "LLM request start to first streamed delta",
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
      registers: [registry],
    }),
    toolLatency: new Histogram({
      name: "fleet_loop_tool_latency_seconds",
      help: "tool_execution_start to tool_execution_end",
      labelNames: ["tool"],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 180],
      registers: [registry],
    }),
    leasesHeld: new Gauge({ name: "fleet_loop_leases_held", help: "Partition leases held", registers: [registry] }),
    commandLag: new Histogram({
      name: "fleet_loop_command_lag_seconds",
      help: "Command timestamp (or publish time) to its outcome event",
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
      registers: [registry],
    }),
    appendsRefused: new Counter({
      name: "fleet_loop_appends_refused_total",
      help: "Event append attempts refused for a passing cause and retried, by cause (storage_full, unavailable, timeout, connection)",
      labelNames: ["cause"],
      registers: [registry],
    }),
    fencedSessions: new Counter({
      name: "fleet_loop_fenced_sessions_total",
      help: "Sessions dropped because another writer fenced this worker",
      registers: [registry],
    }),
    llmTokens: new Counter({
      name: "fleet_loop_llm_tokens_total",
      help: "Tokens of assistant messages appended (input counts cache reads and writes)",
      labelNames: ["kind"],
      registers: [registry],
    }),
    llmCost: new Counter({
      name: "fleet_loop_llm_cost_usd_total",
      help: "Cost in USD of assistant messages appended (usage.cost.total)",
      registers: [registry],
    }),
    lifecycleDone: new Counter({
      name: "fleet_loop_lifecycle_operations_total",
      help: "Deletions, archives and restores carried out to their end (resumed ones included)",
      labelNames: ["op"],
      registers: [registry],
    }),
    lifecycleResumed: new Counter({
      name: "fleet_loop_lifecycle_resumed_total",
      help: "Deletions, archives and restores taken up again from the log (after a crash or a takeover)",
      labelNames: ["op"],
      registers: [registry],
    }),
    lifecycleDuration: new Histogram({
      name: "fleet_loop_lifecycle_duration_seconds",
      help: "Time to carry out a deletion, archive or restore (from its start on this worker)",
      labelNames: ["op"],
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120, 600],
      registers: [registry],
    }),
    retentionBatches: new Counter({
      name: "fleet_loop_retention_batches_total",
      help: "Batches of the retention janitor (FLEET_RETENTION_DAYS)",
      registers: [registry],
    }),
    retentionSessions: new Counter({
      name: "fleet_loop_retention_sessions_total",
      help: "Sessions the retention janitor asked to archive, by outcome (archived, rejected, pending)",
      labelNames: ["outcome"],
      registers: [registry],
    }),
    retentionBatchDuration: new Histogram({
      name: "fleet_loop_retention_batch_seconds",
      help: "Duration of one retention batch, from listing its sessions to their outcomes",
      buckets: [0.1, 0.5, 1, 5, 30, 120, 600],
      registers: [registry],
    }),
    budgetExceeded: new Counter({
      name: "fleet_loop_budget_exceeded_total",
      help: "Budgets reached: a prompt refused (decide), a call refused before it started (start) or stopped (stream)",
      labelNames: ["scope", "when"],
      registers: [registry],
    }),
    undeliverableCommands: new Counter({
      name: "fleet_loop_undeliverable_commands_total",
      help: "Commands acked and dropped because their subject names no valid session of that partition",
      registers: [registry],
    }),
  };
}
export type LoopMetrics = ReturnType<typeof createLoopMetrics>;
