import { decodeToolCallRequest, type ToolCallRequest, toolCallMsgId } from "@fleet/protocol";
import type { JsMsg } from "@nats-io/jetstream";
import type { Logger } from "pino";
import type { AnyToolDefinition } from "../define-tool.js";
import { readCallIdentity } from "./call-identity.js";
import { ackSafely, keepWorking, nakSafely } from "./call-message.js";
import type { CallId } from "./call-records.js";
import { type ClaimDecision, decideDelivery } from "./claim-decision.js";
import type { InflightCall, InflightCalls } from "./inflight-calls.js";
import type { ResultPublisher } from "./result-publisher.js";
import type { DeliveryOutcome, RunnerMetrics } from "./runner-metrics.js";

export interface DeliveryHandlerDeps {
  inflight: InflightCalls;
  publisher: Pick<ResultPublisher, "failed">;
  /** Whether the call was cancelled before it arrived (answers once). */
  cancelledEarly: (key: string) => boolean;
  /** Claims the call on its result subject (see `claimCall`). */
  claim: (call: CallId, tool: AnyToolDefinition, log: Logger) => Promise<ClaimDecision>;
  /** Runs and settles a claimed call (see `runClaimedCall`). */
  run: (entry: InflightCall, req: ToolCallRequest, tool: AnyToolDefinition, log: Logger) => Promise<DeliveryOutcome>;
  /** How often a served call's message is marked in progress. */
  workingIntervalMs: number;
  /** Delay of the nak when serving a call failed. */
  busyRetryMs: number;
  metrics: RunnerMetrics;
  logger: Logger;
}

/**
 * Serves one delivery of a tool's call: `decideDelivery` first (invalid request, redelivery of a
 * call this runner serves), then the claim and the run, keeping the message in progress meanwhile.
 * A failure while serving is not thrown: it is logged and the delivery handed back (nak after `busyRetryMs`).
 */
export function createDeliveryHandler(deps: DeliveryHandlerDeps) {
  const { inflight, metrics } = deps;

  async function serve(entry: InflightCall, req: ToolCallRequest, tool: AnyToolDefinition, log: Logger) {
    const decision = await deps.claim({ sessionId: req.sessionId, toolCallId: req.toolCallId }, tool, log);
    switch (decision.kind) {
      case "duplicate":
        await ackSafely(entry.msg, log);
        return "duplicate";
      case "busy":
        entry.msg.nak(decision.delayMs);
        return "busy";
      case "fail":
        await ackSafely(entry.msg, log);
        return "runner_lost";
      case "claim":
        return deps.run(entry, req, tool, log);
    }
  }

  return async function handleDelivery(m: JsMsg, tool: AnyToolDefinition): Promise<void> {
    const decoded = decodeToolCallRequest(m.data);
    const log = deps.logger.child({
      tool: tool.name,
      streamSeq: m.seq,
      deliveryCount: m.info.deliveryCount,
      ...(decoded.ok ? { sessionId: decoded.value.sessionId, toolCallId: decoded.value.toolCallId } : {}),
    });
    const key = decoded.ok ? toolCallMsgId(decoded.value.sessionId, decoded.value.toolCallId) : "";
    const current = decoded.ok ? inflight.get(key) : undefined;
    const first = decideDelivery({ decoded, toolName: tool.name, runningSeq: current?.seq, seq: m.seq });
    if (first.kind === "invalid") {
      log.error({ evt: "tool_call_invalid", error: first.error }, "invalid tool call request dropped");
      const ident = decoded.ok ? decoded.value : readCallIdentity(m.data);
      if (ident) {
        // Only for a call nothing was written for yet (expected subject sequence 0): a bad copy must not
        // overwrite the outcome of a real call with the same ids.
        await deps.publisher
          .failed(ident, `Invalid tool call request: ${first.error}`, 0)
          .catch((err) => log.warn({ evt: "invalid_request_unanswered", err }, "invalid request left unanswered"));
      }
      await ackSafely(m, log);
      metrics.delivery(tool.name, "bad_request");
      return;
    }
    if (first.kind === "keep_working" && current) {
      current.msg = m;
      m.working();
      return;
    }
    if (first.kind === "after_running" && current) {
      await current.done;
      log.info({ evt: "tool_call_duplicate" }, "a second request of a call this runner ran; acked");
      await ackSafely(m, log);
      metrics.delivery(tool.name, "duplicate");
      return;
    }
    if (!decoded.ok) return;
    const entry = inflight.begin(key, m);
    if (deps.cancelledEarly(key)) entry.controller.abort("cancel");
    const stopWorking = keepWorking(entry, deps.workingIntervalMs);
    try {
      metrics.delivery(tool.name, await serve(entry, decoded.value, tool, log));
    } catch (err) {
      log.error({ evt: "tool_call_failed", err }, "tool call handling failed; handed back to the queue");
      metrics.delivery(tool.name, "failed");
      nakSafely(entry.msg, deps.busyRetryMs);
    } finally {
      stopWorking();
      inflight.end(key);
    }
  };
}
