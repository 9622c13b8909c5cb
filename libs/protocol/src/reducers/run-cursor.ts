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
  /**
   * Messages ended in this run so far, in order (what `agent_end.messages` would carry): pi's
   * `newMessages`, so not a message a session write put in the log at a flush point
   * (`advanceRunCursorPastWrite`).
   */
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

/** The event types `foldRunCursor` may move a cursor on; others leave it as it is. */
export const RUN_CURSOR_EVENT_TYPES: ReadonlySet<FleetEvent["type"]> = new Set<FleetEvent["type"]>([
  "agent_start",
  "command_accepted",
  "agent_end",
  "turn_start",
  "compaction_end",
  "turn_end",
  "queue_update",
  "message_start",
  "message_update",
  "message_end",
  "tool_execution_start",
  "tool_approval_requested",
  "tool_execution_end",
]);

/**
 * Advances the cursor by one event. Outside a run only `command_accepted` of a run-starting command
 * (`RUN_TRIGGER_COMMANDS`) and `agent_start` matter; an `agent_start` inside a run (a run that never
 * ended) starts the new run; an accepted `abort` inside a run sets `abortRequested`. Contract: never
 * throws; `cursor` is not modified; events that do not fit the position (a tool event with no
 * assistant message) are ignored and return `cursor` itself.
 */
export function foldRunCursor(cursor: RunCursor, event: FleetEvent): RunCursor {
  return step(cursor, event, false);
}

/**
 * `foldRunCursor` for a single owner: modifies `cursor` and its arrays in place and returns the
 * cursor after the event (a new object when its kind changes, which takes the arrays over). O(1)
 * per event, where `foldRunCursor` copies the run's growing lists. Only for a cursor this function
 * made from `idleRunCursor()` (or a `copyRunCursor`), never handed to code that keeps it across a fold.
 */
export function advanceRunCursor(cursor: RunCursor, event: FleetEvent): RunCursor {
  return step(cursor, event, true);
}

/**
 * `advanceRunCursor` for a `message_end` that carries out a session write (the event a
 * `pending_write` named): the message is the session's, not the run's, so it only closes the open
 * message. Kept apart from `step`, whose shape the engine's speed depends on.
 */
export function advanceRunCursorPastWrite(cursor: RunCursor): RunCursor {
  if ((cursor.kind === "awaiting_llm" || cursor.kind === "tools_pending") && cursor.openMessage !== null) {
    cursor.openMessage = null;
  }
  return cursor;
}

/** A copy of `cursor` that shares no array that `advanceRunCursor` modifies. */
export function copyRunCursor(cursor: RunCursor): RunCursor {
  if (cursor.kind === "idle") return { ...cursor };
  const copy = { ...cursor, messages: cursor.messages.slice(), undelivered: cursor.undelivered.slice() };
  if (copy.kind !== "tools_pending") return copy;
  return {
    ...copy,
    startedToolCallIds: copy.startedToolCallIds.slice(),
    endedResults: copy.endedResults.slice(),
    pendingToolCallIds: copy.pendingToolCallIds.slice(),
    awaitingApprovalIds: copy.awaitingApprovalIds.slice(),
    finishedResults: copy.finishedResults.slice(),
  };
}

type OpenCursor = Exclude<RunCursor, { kind: "idle" }>;

/** `cursor` itself when owned, else a shallow copy to modify (its arrays are then replaced, never modified). */
const writable = <C extends OpenCursor>(cursor: C, owned: boolean): C => (owned ? cursor : { ...cursor });

/** `list` with `item` appended: in place when owned, else a copy. */
function appended<T>(list: T[], item: T, owned: boolean): T[] {
  if (!owned) return [...list, item];
  list.push(item);
  return list;
}

/** `list` without `item`: in place when owned, else a copy (`list` itself when absent). */
function without<T>(list: T[], item: T, owned: boolean): T[] {
  const index = list.indexOf(item);
  if (index < 0) return list;
  if (!owned) return list.filter((x) => x !== item);
  list.splice(index, 1);
  return list;
}

/**
 * The one fold of a cursor, pure or in place (`owned`). A new cursor is an object literal that
 * lists its fields: one fixed shape per kind, where `{ kind, ...progress, more }` takes V8's slow
 * path (a spread followed by keys the source lacks costs about 10 times as much).
 */
function step(cursor: RunCursor, event: FleetEvent, owned: boolean): RunCursor {
  if (event.type === "agent_start") {
    const trigger = cursor.kind === "idle" ? cursor.pendingTrigger : null;
    return {
      kind: "run_started",
      runId: event.meta.runId ?? event.meta.id,
      trigger,
      messages: [],
      turns: 0,
      abortRequested: false,
      undelivered: trigger?.messages ? trigger.messages.slice() : [],
    };
  }
  if (cursor.kind === "idle") {
    if (event.type !== "command_accepted" || !RUN_TRIGGER_COMMANDS.has(event.commandType)) return cursor;
    const { commandId, commandType, messages } = event;
    const pendingTrigger = messages ? { commandId, commandType, messages } : { commandId, commandType };
    return { kind: "idle", lastRunId: cursor.lastRunId, pendingTrigger };
  }
  switch (event.type) {
    case "command_accepted": {
      if (event.commandType !== "abort" || cursor.abortRequested) return cursor;
      const next = writable(cursor, owned);
      next.abortRequested = true;
      return next;
    }
    case "agent_end":
      return { kind: "idle", lastRunId: cursor.runId, pendingTrigger: null };
    case "turn_start":
      return {
        kind: "awaiting_llm",
        runId: cursor.runId,
        trigger: cursor.trigger,
        messages: cursor.messages,
        turns: cursor.turns + 1,
        abortRequested: cursor.abortRequested,
        undelivered: cursor.undelivered,
        openMessage: null,
      };
    case "compaction_end":
      // The overflowed call is retried in the same turn (its error message stays in the run's messages).
      if (!event.willRetry || cursor.kind !== "awaiting_turn_end") return cursor;
      return {
        kind: "awaiting_llm",
        runId: cursor.runId,
        trigger: cursor.trigger,
        messages: cursor.messages,
        turns: cursor.turns,
        abortRequested: cursor.abortRequested,
        undelivered: cursor.undelivered,
        openMessage: null,
        overflowRetry: true,
      };
    case "turn_end":
      return {
        kind: "between_turns",
        runId: cursor.runId,
        trigger: cursor.trigger,
        messages: cursor.messages,
        turns: cursor.turns,
        abortRequested: cursor.abortRequested,
        undelivered: cursor.undelivered,
        lastAssistant: event.message,
        lastToolResults: event.toolResults,
      };
    case "queue_update": {
      if (!event.delivering?.length) return cursor;
      const next = writable(cursor, owned);
      if (owned) next.undelivered.unshift(...event.delivering);
      else next.undelivered = [...event.delivering, ...cursor.undelivered];
      return next;
    }
    case "message_start": {
      const message = event.message;
      if (message.role === "assistant") {
        return {
          kind: "streaming",
          runId: cursor.runId,
          trigger: cursor.trigger,
          messages: cursor.messages,
          turns: cursor.turns,
          abortRequested: cursor.abortRequested,
          undelivered: cursor.undelivered,
          partial: message,
        };
      }
      // By position: the engine delivers them in order, right after their drain or `turn_start`; other
      // user or custom messages of a run (deferred writes) are flushed only at turn boundaries.
      const delivers = message.role !== "toolResult" && cursor.undelivered.length > 0;
      const opens = cursor.kind === "awaiting_llm" || cursor.kind === "tools_pending";
      if (!delivers && !opens) return cursor;
      const next = writable(cursor, owned);
      if (delivers) {
        if (owned) next.undelivered.shift();
        else next.undelivered = cursor.undelivered.slice(1);
      }
      if (next.kind === "awaiting_llm" || next.kind === "tools_pending") next.openMessage = message;
      return next;
    }
    case "message_update": {
      if (cursor.kind !== "streaming") return cursor;
      const next = writable(cursor, owned);
      next.partial = applyDeltas(cursor.partial, event.deltas);
      return next;
    }
    case "message_end":
      return messageEnded(cursor, event.message, owned);
    case "tool_execution_start": {
      if (cursor.kind !== "tools_pending") return cursor;
      const next = writable(cursor, owned);
      next.startedToolCallIds = appended(cursor.startedToolCallIds, event.toolCallId, owned);
      return next;
    }
    case "tool_approval_requested": {
      if (cursor.kind !== "tools_pending") return cursor;
      const next = writable(cursor, owned);
      next.awaitingApprovalIds = appended(cursor.awaitingApprovalIds, event.toolCallId, owned);
      return next;
    }
    case "tool_execution_end": {
      if (cursor.kind !== "tools_pending") return cursor;
      const { toolCallId, toolName, result, isError } = event;
      const next = writable(cursor, owned);
      next.endedResults = appended(cursor.endedResults, { toolCallId, toolName, result, isError }, owned);
      next.pendingToolCallIds = without(cursor.pendingToolCallIds, toolCallId, owned);
      next.awaitingApprovalIds = without(cursor.awaitingApprovalIds, toolCallId, owned);
      return next;
    }
    default:
      return cursor;
  }
}

function messageEnded(cursor: OpenCursor, message: AgentMessage, owned: boolean): RunCursor {
  const messages = appended(cursor.messages, message, owned);
  if (message.role === "assistant") {
    const toolCalls = message.content.filter((b): b is ToolCallContent => b.type === "toolCall");
    const runsTools = toolCalls.length > 0 && message.stopReason !== "error" && message.stopReason !== "aborted";
    const { runId, trigger, turns, abortRequested, undelivered } = cursor;
    if (!runsTools) {
      return {
        kind: "awaiting_turn_end",
        runId,
        trigger,
        messages,
        turns,
        abortRequested,
        undelivered,
        assistantMessage: message,
      };
    }
    return {
      kind: "tools_pending",
      runId,
      trigger,
      messages,
      turns,
      abortRequested,
      undelivered,
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
  const next = writable(cursor, owned);
  next.messages = messages;
  if (next.kind === "tools_pending") {
    if (message.role === "toolResult") next.finishedResults = appended(next.finishedResults, message, owned);
    next.openMessage = null;
  } else if (next.kind === "awaiting_llm") {
    next.openMessage = null;
  }
  return next;
}

/**
 * The cursor after `events`, in log order (folded in place: O(1) per event). A `message_end` whose id
 * a `pending_write` named is that session write's (`advanceRunCursorPastWrite`), as `evolveSession`
 * tells it.
 */
export function findRunCursor(events: Iterable<FleetEvent>): RunCursor {
  let cursor = idleRunCursor();
  const writes = new Set<string>();
  for (const event of events) {
    if (event.type === "pending_write") writes.add(event.eventId);
    if (event.type === "message_end" && writes.delete(event.meta.id)) cursor = advanceRunCursorPastWrite(cursor);
    else cursor = advanceRunCursor(cursor, event);
  }
  return cursor;
}
