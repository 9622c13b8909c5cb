// Where a run stands in a session's log: what a worker resuming an interrupted run must do next.
import type { ToolCallContent } from "../content.js";
import type { FleetEvent, ToolExecutionResult } from "../events.js";
import type { AgentMessage, AssistantMessage, ToolResultMessage } from "../messages.js";
import { applyDeltas } from "./apply-deltas.js";

/** Fields of every position inside a run. */
export interface RunProgress {
  /** `meta.runId` of `agent_start` (its `meta.id` if the event has none). */
  runId: string;
  /**
   * The last `command_accepted` before `agent_start`: the command that started the run, with the
   * input messages it delivers (`command_accepted.messages`; absent in logs written before them).
   */
  trigger: { commandId: string; commandType: string; messages?: AgentMessage[] } | null;
  /** Messages ended in this run so far, in order (what `agent_end.messages` would carry). */
  messages: AgentMessage[];
  /** `turn_start` events seen in this run. */
  turns: number;
  /** An `abort` was accepted during the run: a resumer carries the run on as aborted. */
  abortRequested: boolean;
  /**
   * Messages the log says this run delivers and whose `message_start` is not in it yet, in delivery
   * order: the trigger's `messages` (from `agent_start`), and a drain's `queue_update.delivering`
   * (put before them: the engine delivers drained `nextTurn` messages before the prompt's own).
   */
  undelivered: AgentMessage[];
}

/** Commands whose acceptance while idle leads to a run (`pendingTrigger`). */
export const RUN_TRIGGER_COMMANDS: ReadonlySet<string> = new Set(["prompt", "continue", "append_message"]);

/** A tool call's `tool_execution_end`, as recorded. */
export interface EndedToolCall {
  toolCallId: string;
  toolName: string;
  result: ToolExecutionResult;
  isError: boolean;
}

/**
 * The position of the last run in a session's log. Next step for a resumer, by kind:
 * - `idle`: nothing (no run, or the last one ended with `agent_end`);
 * - `run_started`: `agent_start` seen, no `turn_start` yet → start the first turn;
 * - `awaiting_llm`: a turn is open and its assistant message has not started → finish
 *   `openMessage` if any, then call the LLM; `overflowRetry` when the call is the one retry after a
 *   context overflow (`compaction_end {willRetry: true}` moved the cursor back here);
 * - `streaming`: an assistant `message_start` without `message_end` → the LLM call was cut;
 *   `partial` is the message rebuilt from its deltas;
 * - `tools_pending`: the assistant message ended with tool calls and `turn_end` is not there yet →
 *   get results for `pendingToolCallIds` (no `tool_execution_end` yet), emit the toolResult messages
 *   still missing (compare `finishedResults`), then `turn_end`;
 * - `awaiting_turn_end`: the assistant message ended without tool calls to run (no calls, or
 *   stopReason error/aborted) → emit `turn_end` (and `agent_end` for error/aborted);
 * - `between_turns`: `turn_end` seen, no `agent_end`, no new `turn_start` → poll the queues, then
 *   start a turn or end the run.
 */
export type RunCursor =
  | { kind: "idle"; lastRunId: string | null; pendingTrigger: RunProgress["trigger"] }
  | ({ kind: "run_started" } & RunProgress)
  | ({ kind: "awaiting_llm"; openMessage: AgentMessage | null; overflowRetry?: true } & RunProgress)
  | ({ kind: "streaming"; partial: AssistantMessage } & RunProgress)
  | ({
      kind: "tools_pending";
      assistantMessage: AssistantMessage;
      /** The message's tool calls, in source order. */
      toolCalls: ToolCallContent[];
      startedToolCallIds: string[];
      /** `tool_execution_end` events, in completion order. */
      endedResults: EndedToolCall[];
      /** Tool calls (source order) with no `tool_execution_end` yet. */
      pendingToolCallIds: string[];
      /** Tool calls with `tool_approval_requested` and no `tool_execution_end` yet. */
      awaitingApprovalIds: string[];
      /** toolResult messages already ended, in order. */
      finishedResults: ToolResultMessage[];
      openMessage: AgentMessage | null;
    } & RunProgress)
  | ({ kind: "awaiting_turn_end"; assistantMessage: AssistantMessage } & RunProgress)
  | ({ kind: "between_turns"; lastAssistant: AssistantMessage; lastToolResults: ToolResultMessage[] } & RunProgress);

export type RunCursorKind = RunCursor["kind"];

export const idleRunCursor = (): RunCursor => ({ kind: "idle", lastRunId: null, pendingTrigger: null });

function progressOf(cursor: Exclude<RunCursor, { kind: "idle" }>): RunProgress {
  return {
    runId: cursor.runId,
    trigger: cursor.trigger,
    messages: cursor.messages,
    turns: cursor.turns,
    abortRequested: cursor.abortRequested,
    undelivered: cursor.undelivered,
  };
}

/**
 * Advances the cursor by one event. Outside a run only `command_accepted` of a run-starting command
 * (`RUN_TRIGGER_COMMANDS`) and `agent_start` matter; an `agent_start` inside a run (a run that never
 * ended) starts the new run; an accepted `abort` inside a run sets `abortRequested`. Contract: never
 * throws; events that do not fit the position (a tool event with no assistant message) are ignored.
 */
export function foldRunCursor(cursor: RunCursor, event: FleetEvent): RunCursor {
  if (event.type === "agent_start") {
    const trigger = cursor.kind === "idle" ? cursor.pendingTrigger : null;
    return {
      kind: "run_started",
      runId: event.meta.runId ?? event.meta.id,
      trigger,
      messages: [],
      turns: 0,
      abortRequested: false,
      undelivered: trigger?.messages ?? [],
    };
  }
  if (cursor.kind === "idle") {
    if (event.type !== "command_accepted" || !RUN_TRIGGER_COMMANDS.has(event.commandType)) return cursor;
    const { commandId, commandType, messages } = event;
    return { ...cursor, pendingTrigger: { commandId, commandType, ...(messages ? { messages } : {}) } };
  }
  const progress = progressOf(cursor);
  switch (event.type) {
    case "command_accepted":
      return event.commandType === "abort" && !cursor.abortRequested ? { ...cursor, abortRequested: true } : cursor;
    case "agent_end":
      return { kind: "idle", lastRunId: cursor.runId, pendingTrigger: null };
    case "turn_start":
      return { kind: "awaiting_llm", ...progress, turns: progress.turns + 1, openMessage: null };
    case "compaction_end":
      // The overflowed call is retried in the same turn (its error message stays in the run's messages).
      if (!event.willRetry || cursor.kind !== "awaiting_turn_end") return cursor;
      return { kind: "awaiting_llm", ...progress, openMessage: null, overflowRetry: true };
    case "turn_end":
      return { kind: "between_turns", ...progress, lastAssistant: event.message, lastToolResults: event.toolResults };
    case "queue_update":
      if (!event.delivering?.length) return cursor;
      return { ...cursor, undelivered: [...event.delivering, ...cursor.undelivered] };
    case "message_start": {
      if (event.message.role === "assistant") return { kind: "streaming", ...progress, partial: event.message };
      // By position: the engine delivers them in order, right after their drain or `turn_start`; other
      // user or custom messages of a run (deferred writes) are flushed only at turn boundaries.
      const delivered =
        event.message.role !== "toolResult" && cursor.undelivered.length > 0
          ? { ...cursor, undelivered: cursor.undelivered.slice(1) }
          : cursor;
      return "openMessage" in delivered ? { ...delivered, openMessage: event.message } : delivered;
    }
    case "message_update":
      return cursor.kind === "streaming" ? { ...cursor, partial: applyDeltas(cursor.partial, event.deltas) } : cursor;
    case "message_end":
      return messageEnded(cursor, progress, event.message);
    case "tool_execution_start":
      if (cursor.kind !== "tools_pending") return cursor;
      return { ...cursor, startedToolCallIds: [...cursor.startedToolCallIds, event.toolCallId] };
    case "tool_approval_requested":
      if (cursor.kind !== "tools_pending") return cursor;
      return { ...cursor, awaitingApprovalIds: [...cursor.awaitingApprovalIds, event.toolCallId] };
    case "tool_execution_end": {
      if (cursor.kind !== "tools_pending") return cursor;
      const { toolCallId, toolName, result, isError } = event;
      return {
        ...cursor,
        endedResults: [...cursor.endedResults, { toolCallId, toolName, result, isError }],
        pendingToolCallIds: cursor.pendingToolCallIds.filter((id) => id !== toolCallId),
        awaitingApprovalIds: cursor.awaitingApprovalIds.filter((id) => id !== toolCallId),
      };
    }
    default:
      return cursor;
  }
}

function messageEnded(
  cursor: Exclude<RunCursor, { kind: "idle" }>,
  progress: RunProgress,
  message: AgentMessage,
): RunCursor {
  const messages = [...progress.messages, message];
  if (message.role === "assistant") {
    const toolCalls = message.content.filter((b): b is ToolCallContent => b.type === "toolCall");
    const runsTools = toolCalls.length > 0 && message.stopReason !== "error" && message.stopReason !== "aborted";
    if (!runsTools) return { kind: "awaiting_turn_end", ...progress, messages, assistantMessage: message };
    return {
      kind: "tools_pending",
      ...progress,
      messages,
      assistantMessage: message,
      toolCalls,
      startedToolCallIds: [],
      endedResults: [],
      pendingToolCallIds: toolCalls.map((c) => c.id),
      awaitingApprovalIds: [],
      finishedResults: [],
      openMessage: null,
    };
  }
  if (cursor.kind === "tools_pending") {
    const finishedResults =
      message.role === "toolResult" ? [...cursor.finishedResults, message] : cursor.finishedResults;
    return { ...cursor, messages, finishedResults, openMessage: null };
  }
  if (cursor.kind === "awaiting_llm") return { ...cursor, messages, openMessage: null };
  return { ...cursor, messages };
}

/** The cursor after `events`, in log order. */
export function findRunCursor(events: Iterable<FleetEvent>): RunCursor {
  let cursor = idleRunCursor();
  for (const event of events) cursor = foldRunCursor(cursor, event);
  return cursor;
}
