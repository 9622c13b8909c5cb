// The session's runtime core: for the session's fold and one input, the events to append and the
// effects to run. Pure: time and ids come in through the context; nothing here reads a clock, a
// socket or a store. The shell (`../session/`) feeds it the commands and timers it receives, appends what it
// returns; the engine (`../engine/`) drives a run with the same pure steps for the inputs of a run
// (`../session-core/provider-chunk.ts`, `tool-result.ts`, `turn-boundary.ts`, `queue-polls.ts`).
import { type AssistantStreamEvent, runCursorOf, type SessionState, streamingMessageOf } from "@fleet/protocol";
import { decideProviderChunk, deltaEvent, isStreamDelta } from "../session-core/provider-chunk.js";
import {
  type BatchCall,
  stepToolResult,
  type ToolExecutionOutcome,
  type ToolResultInput,
} from "../session-core/tool-result.js";
import { decideApprovalExpiry } from "./approval-gate.js";
import { decideCommand } from "./decide-command.js";
import { decideRedelivered } from "./decide-redelivered.js";
import { decideTurnBoundary, decideTurnEnd } from "./decide-turn.js";
import type { CommandInput, DecideContext, Decision, Effect } from "./decision.js";

/** One input of a session, by kind. */
export type RuntimeInput =
  /** A delivered command (or one that could not be decoded). */
  | { kind: "command"; input: CommandInput }
  /** One event of the open LLM call. */
  | { kind: "provider_chunk"; chunk: AssistantStreamEvent }
  /** A tool call's outcome (default mode `parallel`); a live run's come from the engine's batch. */
  | ToolResultInput
  /** A timer armed from the log fired: an approval request's `expiresAt` passed. */
  | { kind: "timer"; timer: "approval_expiry"; toolCallId: string }
  /** The open turn's results are all in (its LLM call, and tool calls if any, are done). */
  | { kind: "turn_end" }
  /**
   * Past a `turn_end`, pi 0.75's turn hooks answered (`prepareNextTurn` applied by the run driver):
   * `stop` is `shouldStopAfterTurn`'s answer (false without the hook).
   */
  | { kind: "turn_boundary"; stop: boolean };

const NO_EFFECTS: Effect[] = [];
const NOTHING: Decision = { kind: "decided", events: [], effects: NO_EFFECTS };

/**
 * Decides one input against the log's fold. Contract: never throws; a `needs_*` decision (commands
 * only) asks the shell for an input it must fetch, then to decide again.
 * - `command`: `decideCommand`, or `decideRedelivered` when the id already has an outcome (an
 *   undecodable input with a known id decides nothing).
 * - `provider_chunk`: `decideChunk`: `message_start`, `message_update`, or `message_end` (after a
 *   `message_start` when the call never started).
 * - `tool_result`: `stepToolResult` (the live run's step too) on the batch as the fold has it:
 *   parallel, the call's `tool_execution_end`, and when it was the batch's last call without one,
 *   the batch's toolResult messages in source order (those not ended yet); sequential, the call's
 *   end and its toolResult message at once. A result for a call that is not pending (late, or a
 *   duplicate) decides nothing.
 * - `timer` `approval_expiry`: `decideApprovalExpiry` (`tool_approval_resolved {outcome: expired}`
 *   and the `approval_decided` effect, unless a decision came first).
 * - `turn_end`: `decideTurnEnd`: `turn_end`, the pending writes flushed, and `agent_end` when the
 *   message is terminal or an abort was accepted.
 * - `turn_boundary`: `decideTurnBoundary`: the queue polls by the session's modes, then the next
 *   turn's `turn_start`, drain and delivered messages, or the writes flushed and `agent_end`.
 * A run step's decision has no effect: the log's run cursor says what the run driver does next.
 */
export function decideInput(state: SessionState, sessionId: string, input: RuntimeInput, ctx: DecideContext): Decision {
  switch (input.kind) {
    case "command": {
      const cmd = input.input;
      const id = cmd.ok ? cmd.command.id : cmd.commandId;
      if (!state.commands.has(id)) return decideCommand(state, sessionId, cmd, ctx);
      return cmd.ok ? decideRedelivered(state, cmd.command, ctx) : NOTHING;
    }
    case "provider_chunk":
      return decideChunk(state, input.chunk, ctx.newId);
    case "tool_result":
      return decideToolResult(state, input.toolCallId, input.outcome, input.mode ?? "parallel", ctx);
    case "timer":
      return decideApprovalExpiry(state, input.toolCallId, ctx.now, ctx.newId);
    case "turn_end":
      return decideTurnEnd(state, ctx);
    case "turn_boundary":
      return decideTurnBoundary(state, input.stop, ctx);
  }
}

/**
 * `decideInput {provider_chunk}`, which needs ids and nothing else of the context (a live run asks
 * it for every chunk). A delta is `deltaEvent` while the fold has an assistant message streaming,
 * and nothing before its `start` (pi): the deltas the fold does not hold yet (the shell folds them
 * coalesced) cannot change that answer. `start`, `done` and `error` are `decideProviderChunk` on
 * the fold's streaming message.
 */
export function decideChunk(state: SessionState, chunk: AssistantStreamEvent, newId: () => string): Decision {
  const status = state.status;
  if (isStreamDelta(chunk)) {
    // The message's role, not its content: no need to apply the deltas the fold holds back.
    if (!status.isStreaming || status.streamingMessage?.role !== "assistant") return NOTHING;
    return { kind: "decided", events: [{ id: newId(), body: deltaEvent(chunk) }], effects: NO_EFFECTS };
  }
  const partial = status.isStreaming ? streamingMessageOf(state) : undefined;
  const open = partial?.role === "assistant" ? partial : undefined;
  const step = decideProviderChunk(open, chunk);
  return { kind: "decided", events: step.events.map((body) => ({ id: newId(), body })), effects: NO_EFFECTS };
}

function decideToolResult(
  state: SessionState,
  toolCallId: string,
  outcome: ToolExecutionOutcome,
  mode: "parallel" | "sequential",
  ctx: DecideContext,
): Decision {
  const cursor = runCursorOf(state);
  if (cursor.kind !== "tools_pending" || !cursor.pendingToolCallIds.includes(toolCallId)) return NOTHING;
  const index = cursor.toolCalls.findIndex((c) => c.id === toolCallId);
  if (index < 0) return NOTHING;
  const calls: BatchCall[] = cursor.toolCalls.map((call) => ({
    call,
    outcome: cursor.endedResults.find((e) => e.toolCallId === call.id),
    message: cursor.finishedResults.find((m) => m.toolCallId === call.id),
  }));
  const step = stepToolResult(calls, index, outcome, mode, ctx.now);
  return { kind: "decided", events: step.events.map((body) => ({ id: ctx.newId(), body })), effects: [] };
}
