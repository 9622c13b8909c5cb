import { type ToolFinalRecord, toolErrorText } from "@fleet/protocol";
import { errorRecord } from "./call-records.js";
import type { CallOutcome } from "./execute-call.js";
import type { DeliveryOutcome } from "./runner-metrics.js";

/**
 * What a runner does with a claimed call once execution ended:
 * - `requeue`: the runner is stopping and the call is `retry: safe`: hand it back (nak) for another
 *   runner, publish nothing;
 * - `publish`: write `record` as the final result (before the size limit is applied) and ack;
 *   `outcome` is the metrics label.
 */
export type Settlement = { kind: "requeue" } | { kind: "publish"; record: ToolFinalRecord; outcome: DeliveryOutcome };

export function decideSettlement(outcome: CallOutcome, tool: { name: string; retry: "safe" | "never" }): Settlement {
  if (outcome.kind === "done") {
    const label = outcome.validationFailed ? "invalid_args" : outcome.record.isError ? "error" : "ok";
    return { kind: "publish", record: outcome.record, outcome: label };
  }
  if (outcome.cause !== "shutdown") {
    return { kind: "publish", record: outcome.record, outcome: outcome.cause === "deadline" ? "deadline" : "aborted" };
  }
  // Stopping runner: a `never` call must not run twice, so it gets the runner-lost error now.
  if (tool.retry === "safe") return { kind: "requeue" };
  return { kind: "publish", record: errorRecord(toolErrorText.runnerLost(tool.name)), outcome: "runner_lost" };
}
