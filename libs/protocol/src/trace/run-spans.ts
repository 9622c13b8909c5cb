import type { EventOf, FleetEvent } from "../events.js";
import type { AgentMessage, AssistantMessage, Usage } from "../messages.js";
import { parseTraceparent, type TraceContext } from "./trace-context.js";
import {
  EMPTY_TRACE_CURSOR,
  foldTraceCursor,
  isTraceStep,
  type RunTraceRoot,
  SpanKey,
  type TraceCursor,
} from "./trace-cursor.js";
import { derivedSpanId } from "./trace-ids.js";

/**
 * The OpenTelemetry GenAI semantic conventions these spans follow: v1.37.0 (status "Development"),
 * the version that names `gen_ai.provider.name`. Fleet's own attributes are under `fleet.`.
 */
export const GENAI_SEMCONV_VERSION = "1.37.0";

export type SpanAttributeValue = string | number | boolean | string[];
export type SpanAttributes = Record<string, SpanAttributeValue>;

/**
 * One span derived from the log. Times are the events' `meta.ts` (epoch ms). `open`: the event that
 * ends the span is not in the log yet (`endMs` is then the run's latest event); an exporter sends only
 * closed spans. Ids are hex (trace 32, span 16), the same every time the same log is derived.
 */
export interface TraceSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  traceState?: string;
  flags: number;
  name: string;
  kind: "internal" | "client";
  startMs: number;
  endMs: number;
  open: boolean;
  status: { code: "unset" | "ok" | "error"; message?: string };
  attributes: SpanAttributes;
  events: { name: string; ts: number; attributes: SpanAttributes }[];
  links: { traceId: string; spanId: string; attributes: SpanAttributes }[];
  /** The run (or standalone compaction) this span belongs to. */
  runId: string;
}

export interface DeriveSpansOptions {
  /** Only the spans of this run. */
  runId?: string;
}

interface RunBuild {
  root: RunTraceRoot;
  rootSpan: TraceSpan;
  spans: TraceSpan[];
  chat?: { span: TraceSpan; firstTokenAt?: number };
  tools: Map<string, TraceSpan>;
  /** `ts` of each step of the run (see `isTraceStep`), by event id. */
  stepTimes: Map<string, number>;
  approvals: Map<string, TraceSpan>;
  compaction?: TraceSpan;
  lastTs: number;
  /** `ts` of the last event before an `owner_change` that came mid-run (where the old owner stopped). */
  stoppedAt?: number;
  newOwner?: string;
  usage: { input: number; output: number; cost: number };
  llmCalls: number;
  toolCalls: number;
}

interface Queued {
  commandId: string;
  mode: QueueName;
  ts: number;
  message: string;
  trace?: TraceContext;
}
type QueueName = "steer" | "followUp" | "nextTurn";
const QUEUES: readonly QueueName[] = ["steer", "followUp", "nextTurn"];
const QUEUE_COMMANDS: Record<string, true> = { steer: true, follow_up: true, next_turn: true };

/**
 * Turns a session's events (in log order; the whole log or any suffix that starts before the runs
 * of interest) into OpenTelemetry spans, per run:
 * - `invoke_agent <agent>` (INTERNAL), the run's root, from `agent_start` to `agent_end`, child of
 *   the traceparent its starting command carried;
 * - `chat <model>` (CLIENT) per LLM call, from the step before its assistant `message_start` to its
 *   `message_end`, with usage, finish reasons, time to first token (first `message_update`) and
 *   `error.type`;
 * - `execute_tool <name>` per tool call (`tool_execution_start` → `_end`);
 * - `approval_wait <tool>`, `compaction <reason>`, `queue_wait <queue>` (a steer, follow-up or
 *   next-turn message from its command's acceptance to its delivery) and `resume_run` (from where
 *   a crashed owner stopped to the new owner's `run_resumed`; the root also gets a `fleet.run_resumed`
 *   event). A call the crash cut (an LLM stream) ends where the old owner stopped, `error.type`
 *   `fleet.worker_lost`.
 * Pure; never throws; the same events give the same spans and ids.
 */
export function deriveRunSpans(events: readonly FleetEvent[], opts: DeriveSpansOptions = {}): TraceSpan[] {
  let cursor: TraceCursor = EMPTY_TRACE_CURSOR;
  const runs = new Map<string, RunBuild>();
  const order: RunBuild[] = [];
  let agentName = "fleet";
  let queues: Record<QueueName, string[]> = { steer: [], followUp: [], nextTurn: [] };
  let queued: Queued[] = [];
  let queueCommand: Omit<Queued, "mode" | "message"> | undefined;

  for (const event of events) {
    const before = cursor;
    cursor = foldTraceCursor(cursor, event);
    const ts = event.meta.ts;
    if (event.type === "session_info") agentName = event.name || agentName;
    const opened = cursor.run && cursor.run !== before.run && cursor.run.root !== before.run?.root;
    if (opened && cursor.run) {
      const build = startRun(cursor.run.root, event, agentName);
      runs.set(cursor.run.root.runId, build);
      order.push(build);
    }
    // A standalone compaction's end carries no run id: it belongs to the compaction that was open.
    const runId = event.meta.runId ?? (event.type === "compaction_end" ? before.run?.root.runId : undefined);
    const run = runId ? runs.get(runId) : undefined;

    if (event.type === "command_accepted") {
      queueCommand = QUEUE_COMMANDS[event.commandType]
        ? { commandId: event.commandId, ts, ...(event.trace ? { trace: event.trace } : {}) }
        : undefined;
    }
    if (event.type === "queue_update") {
      const next = { steer: event.steer.map(j), followUp: event.followUp.map(j), nextTurn: event.nextTurn.map(j) };
      const enqueue = queueCommand && (event.meta.commandId ?? queueCommand.commandId) === queueCommand.commandId;
      if (queueCommand && enqueue) {
        for (const mode of QUEUES) {
          for (const message of next[mode].slice(queues[mode].length)) queued.push({ ...queueCommand, mode, message });
        }
      }
      queueCommand = undefined;
      // What this update delivers: `delivering`, or (older logs) what left the queues.
      const delivered = enqueue
        ? []
        : (event.delivering?.map(j) ?? QUEUES.flatMap((mode) => queues[mode].filter((m) => !next[mode].includes(m))));
      queues = next;
      if (run) {
        for (const message of delivered) {
          const wait = queued.find((q) => q.message === message);
          if (!wait) continue;
          queued = queued.filter((q) => q !== wait);
          run.spans.push(queueWaitSpan(run, wait, ts));
        }
      }
    }
    if (!run) continue;
    if (!opened) applyToRun(run, event, before);
    if (isTraceStep(event)) run.stepTimes.set(event.meta.id, ts);
    run.lastTs = Math.max(run.lastTs, ts);
  }

  const out: TraceSpan[] = [];
  for (const run of order) {
    if (opts.runId !== undefined && run.root.runId !== opts.runId) continue;
    for (const span of run.spans) {
      if (span.open) span.endMs = Math.max(span.startMs, run.lastTs);
      out.push(span);
    }
  }
  return out;
}

function j(message: AgentMessage): string {
  return JSON.stringify(message);
}

function baseSpan(
  root: RunTraceRoot,
  key: string,
  name: string,
  kind: TraceSpan["kind"],
  startMs: number,
  attributes: SpanAttributes,
): TraceSpan {
  return {
    traceId: root.traceId,
    spanId: derivedSpanId(root.runId, key),
    parentSpanId: root.rootSpanId,
    ...(root.tracestate ? { traceState: root.tracestate } : {}),
    flags: root.flags,
    name,
    kind,
    startMs,
    endMs: startMs,
    open: true,
    status: { code: "unset" },
    attributes: { "fleet.run.id": root.runId, ...attributes },
    events: [],
    links: [],
    runId: root.runId,
  };
}

function startRun(root: RunTraceRoot, event: FleetEvent, agentName: string): RunBuild {
  const ts = event.meta.ts;
  const isCompaction = event.type === "compaction_start";
  const rootSpan: TraceSpan = {
    ...baseSpan(
      root,
      SpanKey.root,
      isCompaction ? `compaction ${event.reason}` : `invoke_agent ${agentName}`,
      "internal",
      ts,
      isCompaction
        ? { "fleet.compaction.reason": event.reason, "gen_ai.conversation.id": event.meta.sessionId }
        : {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agentName,
            "gen_ai.conversation.id": event.meta.sessionId,
          },
    ),
    spanId: root.rootSpanId,
  };
  if (root.parentSpanId) rootSpan.parentSpanId = root.parentSpanId;
  else delete rootSpan.parentSpanId;
  const build: RunBuild = {
    root,
    rootSpan,
    spans: [rootSpan],
    tools: new Map(),
    stepTimes: new Map([[event.meta.id, ts]]),
    approvals: new Map(),
    lastTs: ts,
    usage: { input: 0, output: 0, cost: 0 },
    llmCalls: 0,
    toolCalls: 0,
  };
  if (isCompaction) build.compaction = rootSpan;
  return build;
}

function close(span: TraceSpan, ts: number) {
  span.endMs = Math.max(span.startMs, ts);
  span.open = false;
}

function fail(span: TraceSpan, errorType: string, message?: string) {
  span.attributes["error.type"] = errorType;
  span.status = message ? { code: "error", message } : { code: "error" };
}

function usageAttributes(usage: Usage): SpanAttributes {
  return {
    // The prompt's tokens, cached or not (pi counts cache reads and writes apart from `input`).
    "gen_ai.usage.input_tokens": usage.input + usage.cacheRead + usage.cacheWrite,
    "gen_ai.usage.output_tokens": usage.output,
    "fleet.usage.cache_read_tokens": usage.cacheRead,
    "fleet.usage.cache_write_tokens": usage.cacheWrite,
    "fleet.cost.usd": usage.cost.total,
  };
}

function applyToRun(run: RunBuild, event: FleetEvent, before: TraceCursor) {
  const ts = event.meta.ts;
  const root = run.root;
  switch (event.type) {
    case "message_start": {
      if (event.message.role !== "assistant") return;
      if (run.chat) return;
      const stepId = before.run?.root.runId === root.runId ? before.run.lastStepId : event.meta.id;
      const start = run.stepTimes.get(stepId) ?? ts;
      const m = event.message;
      const span = baseSpan(root, SpanKey.chat(stepId), `chat ${m.model}`, "client", start, {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": m.provider,
        "gen_ai.request.model": m.model,
      });
      run.spans.push(span);
      run.chat = { span };
      run.llmCalls++;
      if (run.rootSpan.attributes["gen_ai.request.model"] === undefined) {
        run.rootSpan.attributes["gen_ai.provider.name"] = m.provider;
        run.rootSpan.attributes["gen_ai.request.model"] = m.model;
      }
      return;
    }
    case "message_update": {
      if (run.chat && run.chat.firstTokenAt === undefined) run.chat.firstTokenAt = ts;
      return;
    }
    case "message_end": {
      if (event.message.role !== "assistant" || !run.chat) return;
      endChat(run, run.chat, event.message, ts);
      run.chat = undefined;
      return;
    }
    case "tool_execution_start": {
      if (run.tools.has(event.toolCallId)) return;
      const span = baseSpan(root, SpanKey.tool(event.toolCallId), `execute_tool ${event.toolName}`, "internal", ts, {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": event.toolName,
        "gen_ai.tool.call.id": event.toolCallId,
        "gen_ai.tool.type": "function",
      });
      run.tools.set(event.toolCallId, span);
      run.spans.push(span);
      run.toolCalls++;
      return;
    }
    case "tool_execution_end": {
      const span = run.tools.get(event.toolCallId);
      if (!span?.open) return;
      if (event.isError) fail(span, "tool_error", firstText(event.result.content));
      close(span, ts);
      return;
    }
    case "tool_approval_requested": {
      if (run.approvals.has(event.toolCallId)) return;
      const key = SpanKey.approval(event.toolCallId);
      const span = baseSpan(root, key, `approval_wait ${event.toolName}`, "internal", ts, {
        "gen_ai.tool.name": event.toolName,
        "gen_ai.tool.call.id": event.toolCallId,
      });
      run.approvals.set(event.toolCallId, span);
      run.spans.push(span);
      return;
    }
    case "tool_approval_resolved": {
      const span = run.approvals.get(event.toolCallId);
      if (!span?.open) return;
      span.attributes["fleet.approval.approved"] = event.approved;
      if (event.reason) span.attributes["fleet.approval.reason"] = event.reason;
      close(span, ts);
      return;
    }
    case "compaction_start": {
      if (run.compaction?.open) return;
      const span = baseSpan(root, SpanKey.compaction(event.meta.id), `compaction ${event.reason}`, "internal", ts, {
        "fleet.compaction.reason": event.reason,
      });
      run.compaction = span;
      run.spans.push(span);
      return;
    }
    case "compaction": {
      const span = run.compaction;
      if (!span?.open) return;
      span.attributes["fleet.compaction.tokens_before"] = event.tokensBefore;
      if (event.usage) Object.assign(span.attributes, usageAttributes(event.usage));
      return;
    }
    case "compaction_end": {
      const span = run.compaction;
      if (!span?.open) return;
      if (event.errorMessage) fail(span, "compaction_failed", event.errorMessage);
      else if (event.aborted) span.attributes["fleet.aborted"] = true;
      close(span, ts);
      return;
    }
    case "owner_change": {
      // Mid-run: the previous owner stopped after its last event.
      run.stoppedAt = run.lastTs;
      run.newOwner = event.workerId;
      return;
    }
    case "run_resumed": {
      const stoppedAt = run.stoppedAt ?? run.lastTs;
      const attributes: SpanAttributes = { "fleet.resume.reason": event.reason };
      if (run.newOwner) attributes["fleet.worker.id"] = run.newOwner;
      const span = baseSpan(root, SpanKey.resume(event.meta.id), "resume_run", "internal", stoppedAt, attributes);
      close(span, ts);
      run.spans.push(span);
      run.rootSpan.events.push({ name: "fleet.run_resumed", ts, attributes });
      if (run.chat) {
        fail(run.chat.span, "fleet.worker_lost", "the worker streaming this call stopped; the run resumed");
        close(run.chat.span, stoppedAt);
        run.chat = undefined;
      }
      run.stoppedAt = undefined;
      return;
    }
    case "agent_end": {
      const last = [...event.messages].reverse().find((m): m is AssistantMessage => m.role === "assistant");
      const a = run.rootSpan.attributes;
      a["gen_ai.usage.input_tokens"] = run.usage.input;
      a["gen_ai.usage.output_tokens"] = run.usage.output;
      a["fleet.cost.usd"] = run.usage.cost;
      a["fleet.llm_calls"] = run.llmCalls;
      a["fleet.tool_calls"] = run.toolCalls;
      if (last?.stopReason === "error") fail(run.rootSpan, last.errorReason ?? "llm_error", last.errorMessage);
      if (last?.stopReason === "aborted") a["fleet.aborted"] = true;
      close(run.rootSpan, ts);
      return;
    }
    default:
      return;
  }
}

function endChat(run: RunBuild, chat: NonNullable<RunBuild["chat"]>, message: AssistantMessage, ts: number) {
  const span = chat.span;
  Object.assign(span.attributes, usageAttributes(message.usage), {
    "gen_ai.response.model": message.model,
    "gen_ai.response.finish_reasons": [message.stopReason],
  });
  const firstToken = chat.firstTokenAt ?? ts;
  span.attributes["fleet.time_to_first_token"] = Math.max(0, firstToken - span.startMs) / 1000;
  if (message.stopReason === "error") fail(span, message.errorReason ?? "llm_error", message.errorMessage);
  if (message.stopReason === "aborted") span.attributes["fleet.aborted"] = true;
  run.usage.input += message.usage.input + message.usage.cacheRead + message.usage.cacheWrite;
  run.usage.output += message.usage.output;
  run.usage.cost += message.usage.cost.total;
  close(span, ts);
}

function queueWaitSpan(run: RunBuild, wait: Queued, ts: number): TraceSpan {
  const span = baseSpan(run.root, SpanKey.queue(wait.commandId), `queue_wait ${wait.mode}`, "internal", wait.ts, {
    "fleet.queue": wait.mode,
    "fleet.command.id": wait.commandId,
  });
  const caller = parseTraceparent(wait.trace?.traceparent);
  if (caller) span.links.push({ traceId: caller.traceId, spanId: caller.spanId, attributes: {} });
  close(span, ts);
  return span;
}

function firstText(content: EventOf<"tool_execution_end">["result"]["content"]): string | undefined {
  for (const block of content) if (block.type === "text") return block.text.slice(0, 256);
  return undefined;
}
