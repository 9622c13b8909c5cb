import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** How a delivery ended (the `outcome` label). */
export type DeliveryOutcome =
  | "ok"
  | "error"
  | "invalid_args"
  | "aborted"
  | "deadline"
  | "runner_lost"
  | "duplicate"
  | "busy"
  | "requeued"
  | "bad_request"
  | "failed";

export interface RunnerMetrics {
  delivery(tool: string, outcome: DeliveryOutcome): void;
  duration(tool: string, seconds: number): void;
  active(tool: string, delta: number): void;
}

export const noMetrics: RunnerMetrics = { delivery() {}, duration() {}, active() {} };

export function createRunnerMetrics(registry: Registry): RunnerMetrics {
  const deliveries = new Counter({
    name: "fleet_tool_deliveries_total",
    help: "Tool call deliveries by outcome",
    labelNames: ["tool", "outcome"],
    registers: [registry],
  });
  const durations = new Histogram({
    name: "fleet_tool_call_duration_seconds",
    help: "Execution time of tool calls (validation to final record)",
    labelNames: ["tool"],
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 180],
    registers: [registry],
  });
  const active = new Gauge({
    name: "fleet_tool_calls_active",
    help: "Tool calls in progress on this runner",
    labelNames: ["tool"],
    registers: [registry],
  });
  return {
    delivery: (tool, outcome) => deliveries.inc({ tool, outcome }),
    duration: (tool, seconds) => durations.observe({ tool }, seconds),
    active: (tool, delta) => active.inc({ tool }, delta),
  };
}
