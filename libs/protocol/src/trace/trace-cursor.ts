import type { FleetEvent } from "../events.js";
import { formatTraceparent, parseTraceparent, type TraceContext } from "./trace-context.js";
import { derivedSpanId, derivedTraceId } from "./trace-ids.js";

/**
 * Where a run sits in its trace. `traceId` and `parentSpanId` come from the caller's traceparent
 * (recorded on the `command_accepted` that started the run), else the trace id is derived from the
 * run id and the root has no parent. The root span's id is always derived from the run id.
 */
export interface RunTraceRoot {
  runId: string;
  traceId: string;
  rootSpanId: string;
  parentSpanId?: string;
  flags: number;
  tracestate?: string;
}

/**
 * The trace state a session's log implies, folded event by event (`foldTraceCursor`): the loop keeps
 * one per session to put trace context on the LLM request and on tool calls, and `deriveRunSpans`
 * folds the same way, so the ids on the wire are the ids of the exported spans.
 */
export interface TraceCursor {
  /** The `trace` of the latest `command_accepted`: the one just before an `agent_start` started that run. */
  lastCommandTrace: TraceContext | undefined;
  /**
   * The open run (or standalone compaction), the id of its latest step (see `isTraceStep`), and the
   * id of the `compaction_start` of a compaction open in it (its summary's LLM calls are that span's).
   */
  run: { root: RunTraceRoot; lastStepId: string; standalone: boolean; compactionId?: string } | undefined;
}

export const EMPTY_TRACE_CURSOR: TraceCursor = { lastCommandTrace: undefined, run: undefined };

/** Span-id keys, unique within a run. */
export const SpanKey = {
  root: "root",
  chat: (stepId: string) => `chat:${stepId}`,
  tool: (toolCallId: string) => `tool:${toolCallId}`,
  approval: (toolCallId: string) => `approval:${toolCallId}`,
  compaction: (startId: string) => `compaction:${startId}`,
  queue: (commandId: string) => `queue:${commandId}`,
  resume: (resumedId: string) => `resume:${resumedId}`,
} as const;

export function runTraceRoot(runId: string, trace: TraceContext | undefined): RunTraceRoot {
  const parent = parseTraceparent(trace?.traceparent);
  return {
    runId,
    traceId: parent?.traceId ?? derivedTraceId(runId),
    rootSpanId: derivedSpanId(runId, SpanKey.root),
    ...(parent ? { parentSpanId: parent.spanId } : {}),
    flags: parent?.flags ?? 1,
    ...(parent && trace?.tracestate ? { tracestate: trace.tracestate } : {}),
  };
}

/**
 * A *step* of a run: an event after which the loop may call the LLM. An LLM call's span is keyed by
 * the last step before it, which the loop knows when it sends the request and a reader finds just
 * before the call's assistant `message_start`. Events a command's acceptance appends mid-call
 * (`command_accepted`, `queue_update`, `pending_write`, approvals) are not steps.
 */
export function isTraceStep(event: FleetEvent): boolean {
  switch (event.type) {
    case "agent_start":
    case "turn_start":
    case "message_end":
    case "tool_execution_end":
    case "turn_end":
    case "run_resumed":
    case "compaction_end":
      return event.meta.commandId === undefined;
    default:
      return false;
  }
}

/** Pure; never throws. */
export function foldTraceCursor(cursor: TraceCursor, event: FleetEvent): TraceCursor {
  if (event.type === "command_accepted") return { ...cursor, lastCommandTrace: event.trace };
  const runId = event.meta.runId;
  const standalone = event.type === "compaction_start" && runId === event.meta.id;
  if ((event.type === "agent_start" || standalone) && runId) {
    const root = runTraceRoot(runId, cursor.lastCommandTrace);
    return {
      ...cursor,
      run: { root, lastStepId: event.meta.id, standalone, ...(standalone ? { compactionId: event.meta.id } : {}) },
    };
  }
  const run = cursor.run;
  // A standalone compaction's `compaction_end` is the first event without its run id.
  if (run?.standalone && event.type === "compaction_end" && !runId) return { ...cursor, run: undefined };
  if (!run || runId !== run.root.runId) return cursor;
  if (event.type === "agent_end") return { ...cursor, run: undefined };
  if (event.type === "compaction_start") return { ...cursor, run: { ...run, compactionId: event.meta.id } };
  const next = event.type === "compaction_end" ? { ...run, compactionId: undefined } : run;
  return isTraceStep(event) ? { ...cursor, run: { ...next, lastStepId: event.meta.id } } : cursor;
}

/**
 * The traceparent for the LLM request the open run sends now, if a run is open: its `chat` span, or
 * while a compaction is open the `compaction` span (the root of a standalone compaction).
 */
export function chatTraceparent(cursor: TraceCursor): string | undefined {
  const run = cursor.run;
  if (!run) return undefined;
  const { traceId, flags, runId } = run.root;
  const spanId = run.standalone
    ? run.root.rootSpanId
    : derivedSpanId(runId, run.compactionId ? SpanKey.compaction(run.compactionId) : SpanKey.chat(run.lastStepId));
  return formatTraceparent({ traceId, flags, spanId });
}

/** The traceparent for a tool call of run `runId` (its `execute_tool` span). */
export function toolTraceparent(cursor: TraceCursor, runId: string, toolCallId: string): string | undefined {
  const root = cursor.run?.root;
  if (!root || root.runId !== runId) return undefined;
  return formatTraceparent({
    traceId: root.traceId,
    flags: root.flags,
    spanId: derivedSpanId(runId, SpanKey.tool(toolCallId)),
  });
}
