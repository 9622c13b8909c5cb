import type { ToolCallRequest } from "../tool-records.js";
import type { TraceSpan } from "./run-spans.js";
import { parseTraceparent } from "./trace-context.js";
import { derivedSpanId } from "./trace-ids.js";

/** One execution of a tool call on a runner, as the runner saw it. */
export interface RunnerExecution {
  runnerId: string;
  startMs: number;
  endMs: number;
  /** How the delivery ended (`ok`, `error`, `invalid_args`, …: the runner's delivery outcome). */
  outcome: string;
}

/**
 * The runner's side of a tool call (change 46): an `execute_tool <name>` span, child of the loop's
 * `execute_tool` span named by the request's `traceparent`, covering this runner's execution; its
 * id is derived from the run, the call, the runner and the start, so each execution has its own.
 * Undefined when the request carries no trace context. Pure.
 */
export function runnerToolSpan(
  req: Pick<ToolCallRequest, "runId" | "toolCallId" | "toolName" | "traceparent" | "tracestate">,
  run: RunnerExecution,
): TraceSpan | undefined {
  const parent = parseTraceparent(req.traceparent);
  if (!parent) return undefined;
  const failed = run.outcome !== "ok";
  return {
    traceId: parent.traceId,
    spanId: derivedSpanId(req.runId, `runner:${req.toolCallId}:${run.runnerId}:${run.startMs}`),
    parentSpanId: parent.spanId,
    ...(req.tracestate ? { traceState: req.tracestate } : {}),
    flags: parent.flags,
    name: `execute_tool ${req.toolName}`,
    kind: "internal",
    startMs: run.startMs,
    endMs: Math.max(run.startMs, run.endMs),
    open: false,
    status: failed ? { code: "error" } : { code: "unset" },
    attributes: {
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": req.toolName,
      "gen_ai.tool.call.id": req.toolCallId,
      "fleet.run.id": req.runId,
      "fleet.runner.id": run.runnerId,
      "fleet.tool.outcome": run.outcome,
      ...(failed ? { "error.type": run.outcome } : {}),
    },
    events: [],
    links: [],
    runId: req.runId,
  };
}
