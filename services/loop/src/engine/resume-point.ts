// Where an interrupted run stands, as the engine needs it to carry on (a small mirror of
// @fleet/protocol's RunCursor; see `resumePointFromCursor`).
import type { AgentMessage, AssistantMessage, RunCursor, ToolResultMessage } from "@fleet/protocol";
import { hasMoreToolCallsAfter } from "../session-core/turn-boundary.js";
import type { ToolExecutionOutcome } from "./types.js";

interface ResumeCommon {
  /** The interrupted run's id: every event of the resumed run carries it. */
  runId: string;
  /** Goes into `run_resumed.reason` and into the errorMessage of a closed dangling message. */
  reason: string;
  /** Messages the run ended before the interruption, in order (`agent_end.messages` starts with them). */
  runMessages?: readonly AgentMessage[];
  /** An abort was accepted before the interruption: the run carries on aborted. */
  aborted?: boolean;
}

/**
 * - `awaiting_llm`: a turn is open (`turnOpen`) or about to start, no assistant message yet. An
 *   `openMessage` (started, never ended) gets its `message_end` first, then the `undelivered`
 *   messages (the prompt's, a drain's) are delivered. Then the LLM is called.
 * - `streaming`: the assistant message was cut mid-stream. It is closed with `message_end`
 *   (stopReason `error`, errorMessage naming the interruption) and `turn_end`; then a new turn
 *   calls the LLM again (providers drop error messages when replaying).
 * - `tools_pending`: the assistant message ended with tool calls, `turn_end` missing. Calls with a
 *   recorded outcome are not run again; calls already started (`startedIds`) get no second
 *   `tool_execution_start` and are awaited (the service finds their result or dedups the dispatch
 *   by toolCallId); the others run; toolResult messages missing from `finishedResults` are
 *   emitted; then `turn_end` and the loop carries on as pi would.
 * - `awaiting_turn_end`: the assistant message ended with nothing to run: `turn_end`, then (error /
 *   aborted) `agent_end`, else the queues are polled.
 * - `between_turns`: after `turn_end`: poll steering (and follow-ups when the run would stop) and
 *   carry on; `hasMoreToolCalls` defaults to "the last assistant message had tool calls".
 */
export type ResumePoint = ResumeCommon &
  (
    | {
        at: "awaiting_llm";
        turnOpen: boolean;
        openMessage?: AgentMessage | null;
        /** Messages the run delivers before its LLM call that the log has no `message_start` of. */
        undelivered?: readonly AgentMessage[];
        /** The call is the one retry after a context overflow: no second overflow compaction. */
        overflowRetry?: boolean;
      }
    | { at: "streaming"; partial: AssistantMessage }
    | {
        at: "tools_pending";
        assistantMessage: AssistantMessage;
        /** Recorded `tool_execution_end` outcomes by toolCallId. */
        endedResults?: ReadonlyMap<string, ToolExecutionOutcome>;
        /** toolResult messages already ended. */
        finishedResults?: readonly ToolResultMessage[];
        /** Calls with a `tool_execution_start` in the log. */
        startedIds?: readonly string[];
      }
    | { at: "awaiting_turn_end"; assistantMessage: AssistantMessage }
    | { at: "between_turns"; lastAssistant: AssistantMessage; hasMoreToolCalls?: boolean }
  );

export { interruptedErrorMessage } from "../session-core/turn-boundary.js";

/**
 * Maps the protocol's run cursor to a resume point; `undefined` for `idle` (nothing to resume). The
 * point shares no list with the cursor (the session's fold changes its lists in place).
 */
export function resumePointFromCursor(cursor: RunCursor, reason: string): ResumePoint | undefined {
  if (cursor.kind === "idle") return undefined;
  const runMessages = cursor.messages.slice();
  const common = { runId: cursor.runId, reason, runMessages, aborted: cursor.abortRequested };
  switch (cursor.kind) {
    case "run_started":
      return { ...common, at: "awaiting_llm", turnOpen: false, undelivered: cursor.undelivered.slice() };
    case "awaiting_llm":
      return {
        ...common,
        at: "awaiting_llm",
        turnOpen: true,
        openMessage: cursor.openMessage,
        undelivered: cursor.undelivered.slice(),
        ...(cursor.overflowRetry ? { overflowRetry: true } : {}),
      };
    case "streaming":
      return { ...common, at: "streaming", partial: cursor.partial };
    case "tools_pending":
      return {
        ...common,
        at: "tools_pending",
        assistantMessage: cursor.assistantMessage,
        endedResults: new Map(
          cursor.endedResults.map((r) => [r.toolCallId, { result: r.result, isError: r.isError }] as const),
        ),
        finishedResults: cursor.finishedResults.slice(),
        startedIds: cursor.startedToolCallIds.slice(),
      };
    case "awaiting_turn_end":
      return { ...common, at: "awaiting_turn_end", assistantMessage: cursor.assistantMessage };
    case "between_turns":
      return {
        ...common,
        at: "between_turns",
        lastAssistant: cursor.lastAssistant,
        hasMoreToolCalls: hasMoreToolCallsAfter(cursor.lastAssistant, cursor.lastToolResults),
      };
  }
}
