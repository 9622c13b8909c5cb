import type { ToolCallRequest, ToolFinalRecord } from "@fleet/protocol";
import type { ObjectStore } from "@nats-io/obj";
import type { MsgHdrs } from "@nats-io/transport-node";
import type { Logger } from "pino";
import type { AnyToolDefinition } from "../define-tool.js";
import type { ProcessSandbox } from "../sandbox/process-sandbox.js";
import { decideDeadline } from "./call-deadline.js";
import { ackSafely } from "./call-message.js";
import { errorRecord } from "./call-records.js";
import type { CallWorkspace } from "./call-workspaces.js";
import { executeCall } from "./execute-call.js";
import type { InflightCall } from "./inflight-calls.js";
import { limitFinalRecord } from "./limit-record.js";
import { blobPrefix, createNatsBlobSink } from "./nats-blob-sink.js";
import type { ResultPublisher } from "./result-publisher.js";
import type { DeliveryOutcome, RunnerMetrics } from "./runner-metrics.js";
import { decideSettlement } from "./settle-decision.js";
import { createUpdateThrottle } from "./update-throttle.js";

/** The W3C trace context headers of a call's request message, if any. */
function traceContextOf(headers: MsgHdrs | undefined): { traceContext?: Record<string, string> } {
  const out: Record<string, string> = {};
  for (const name of ["traceparent", "tracestate"]) {
    const value = headers?.get(name);
    if (value) out[name] = value;
  }
  return out.traceparent ? { traceContext: out } : {};
}

export interface RunClaimedCallDeps {
  publisher: Pick<ResultPublisher, "update" | "final">;
  blobStore: ObjectStore;
  sandbox: ProcessSandbox;
  workspaceOf: (sessionId: string) => Promise<CallWorkspace>;
  updateIntervalMs: number;
  abortGraceMs: number;
  maxRecordBytes: number;
  maxArgsBytes: number | undefined;
  metrics: RunnerMetrics;
  now: () => number;
}

/**
 * Runs a call this runner claimed: executes it in the session's workspace, publishes throttled
 * progress, then settles it as `decideSettlement` says: the final record (size-limited, overflow
 * to `fleet_blobs`) and an ack, or a nak back to the queue. Resolves the metrics label; rejects
 * when the result cannot be published (the caller hands the delivery back).
 */
export async function runClaimedCall(
  deps: RunClaimedCallDeps,
  entry: InflightCall,
  req: ToolCallRequest,
  tool: AnyToolDefinition,
  log: Logger,
): Promise<DeliveryOutcome> {
  const { now, publisher } = deps;
  const call = { sessionId: req.sessionId, toolCallId: req.toolCallId };
  const startedAt = now();
  const { deadlineAt, deadlineMs } = decideDeadline({
    requestDeadline: req.deadline,
    publishedAt: Math.floor(entry.msg.info.timestampNanos / 1_000_000),
    startedAt,
    timeoutMs: tool.timeoutMs,
  });
  const blobs = createNatsBlobSink(deps.blobStore, blobPrefix(req.sessionId, req.toolCallId));
  const updates = createUpdateThrottle({
    intervalMs: deps.updateIntervalMs,
    now,
    publish: (partial) =>
      publisher
        .update(call, partial)
        .catch((err) => log.debug({ evt: "update_dropped", err }, "update record not published")),
  });

  let workspace: CallWorkspace;
  try {
    workspace = await deps.workspaceOf(req.sessionId);
  } catch (err) {
    await publisher.final(call, errorRecord(`Cannot prepare the workspace: ${(err as Error).message}`), log);
    await ackSafely(entry.msg, log);
    return "error";
  }
  const outcome = await executeCall({
    tool,
    args: req.args,
    sessionId: req.sessionId,
    toolCallId: req.toolCallId,
    workspace: workspace.path,
    ...(workspace.quota ? { quota: workspace.quota } : {}),
    logger: log,
    blobs,
    sandbox: deps.sandbox,
    deadlineAt,
    deadlineMs,
    now,
    signal: entry.controller.signal,
    onUpdate: updates.push,
    ...traceContextOf(entry.msg.headers),
    abortGraceMs: deps.abortGraceMs,
    ...(deps.maxArgsBytes !== undefined ? { maxArgsBytes: deps.maxArgsBytes } : {}),
  });
  await updates.close();
  deps.metrics.duration(tool.name, (now() - startedAt) / 1000);

  const settlement = decideSettlement(outcome, tool);
  if (settlement.kind === "requeue") {
    log.info({ evt: "tool_call_requeued" }, "runner stopping: call handed back to the queue");
    entry.msg.nak();
    return "requeued";
  }
  let record: ToolFinalRecord;
  try {
    record = await limitFinalRecord(settlement.record, blobs, tool.name, deps.maxRecordBytes);
  } catch (err) {
    record = errorRecord(
      `Tool ${tool.name} output is over the result limit and could not be stored: ${(err as Error).message}`,
    );
  }
  await publisher.final(call, record, log);
  log.info(
    { evt: "tool_call_done", outcome: settlement.outcome, ms: now() - startedAt, isError: record.isError },
    "tool call done",
  );
  await ackSafely(entry.msg, log);
  return settlement.outcome;
}
