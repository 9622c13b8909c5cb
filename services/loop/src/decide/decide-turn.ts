// A run's turn boundaries as inputs of the runtime core: `turn_end` once the turn's results are in
// the log, and, after it, where the run goes once pi 0.75's turn hooks answered (the next turn with
// the messages the queue polls take, or `agent_end`). Pure: the steps are `../session-core/`'s
// (`stepTurnBoundary`, `takeQueued`, `drainUpdate`, `flushDrafts`), the facts the fold's.
import {
  type AgentMessage,
  type AssistantMessage,
  DEFAULT_SESSION_CONFIG,
  runCursorOf,
  type SessionState,
  streamingMessageOf,
  type ToolResultMessage,
} from "@fleet/protocol";
import type { DraftEvent } from "../session-core/drafts.js";
import { drainUpdate, type QueueHeads, takeQueued } from "../session-core/queue-polls.js";
import { flushDrafts } from "../session-core/session-write.js";
import {
  agentEndBody,
  boundaryAfter,
  hasMoreToolCallsAfter,
  stepTurnBoundary,
  turnEndBody,
} from "../session-core/turn-boundary.js";
import type { DecideContext, Decision } from "./decision.js";

const NOTHING: Decision = { kind: "decided", events: [], effects: [] };

/** A turn whose results are all in the log and whose `turn_end` is not. */
interface FinishedTurn {
  message: AssistantMessage;
  toolResults: ToolResultMessage[];
  /** The run's messages so far (`RunProgress.messages`). */
  runMessages: AgentMessage[];
  abortRequested: boolean;
}

function finishedTurn(state: SessionState): FinishedTurn | undefined {
  const cursor = runCursorOf(state);
  const { messages, abortRequested } = cursor.kind === "idle" ? { messages: [], abortRequested: false } : cursor;
  if (cursor.kind === "awaiting_turn_end") {
    return { message: cursor.assistantMessage, toolResults: [], runMessages: messages, abortRequested };
  }
  if (cursor.kind !== "tools_pending" || cursor.pendingToolCallIds.length > 0) return undefined;
  if (cursor.finishedResults.length < cursor.toolCalls.length) return undefined;
  const toolResults = cursor.finishedResults.slice();
  return { message: cursor.assistantMessage, toolResults, runMessages: messages, abortRequested };
}

/**
 * `turn_end` of a turn whose results are all in (its assistant message ended with nothing to run,
 * or every call's toolResult message ended), then the pending writes flushed at it; a terminal
 * message or an accepted abort ends the run there (`agent_end`), before the turn hooks would be
 * asked. Anywhere else: nothing. An overflowed call's recovery (automatic compaction) is the
 * engine's, before this.
 */
export function decideTurnEnd(state: SessionState, ctx: DecideContext): Decision {
  const turn = finishedTurn(state);
  if (!turn) return NOTHING;
  const events = [
    { id: ctx.newId(), body: turnEndBody(turn.message, turn.toolResults) },
    ...flushDrafts(state.pendingWrites, streamingMessageOf(state), ctx.newId),
  ];
  const boundary = boundaryAfter(turn.message, false);
  boundary.aborted = turn.abortRequested;
  if (stepTurnBoundary(boundary).next === "end_run") {
    events.push({ id: ctx.newId(), body: agentEndBody(turn.runMessages.slice()) });
  }
  return { kind: "decided", events, effects: [] };
}

/**
 * After a `turn_end`, with the turn hooks' answer (`stop`: `shouldStopAfterTurn`'s, false without
 * one; not used when the run ends before they are asked): `stepTurnBoundary` with the fold's facts
 * (the accepted abort, the queues polled by the session's modes). A next turn is `turn_start`, the
 * drain's `queue_update` and the taken messages' `message_start` / `message_end`; the run's end is
 * the pending writes flushed, then `agent_end` with the run's messages as the log has them (as a
 * resumed run's). Anywhere but between turns: nothing.
 */
export function decideTurnBoundary(state: SessionState, stop: boolean, ctx: DecideContext): Decision {
  const cursor = runCursorOf(state);
  if (cursor.kind !== "between_turns") return NOTHING;
  const config = state.tree.config ?? DEFAULT_SESSION_CONFIG;
  const queues = state.status.queues;
  const heads: QueueHeads = { steer: 0, followUp: 0, nextTurn: 0 };
  const more = hasMoreToolCallsAfter(cursor.lastAssistant, cursor.lastToolResults);
  const boundary = boundaryAfter(cursor.lastAssistant, more);
  boundary.aborted = cursor.abortRequested;
  while (true) {
    const step = stepTurnBoundary(boundary);
    switch (step.next) {
      case "ask_turn_hooks":
        boundary.stop = stop;
        break;
      case "poll": {
        const mode = step.queue === "steer" ? config.steeringMode : config.followUpMode;
        const taken = takeQueued(queues, step.queue, 0, mode);
        heads[step.queue] = taken.length;
        if (step.queue === "steer") boundary.steering = taken;
        else boundary.followUps = taken;
        break;
      }
      case "turn":
        return { kind: "decided", events: nextTurnDrafts(step.pending, heads, state, ctx), effects: [] };
      case "end_run": {
        const events = flushDrafts(state.pendingWrites, streamingMessageOf(state), ctx.newId);
        events.push({ id: ctx.newId(), body: agentEndBody(cursor.messages.slice()) });
        return { kind: "decided", events, effects: [] };
      }
    }
  }
}

/** A next turn's start: `turn_start`, the drain of the taken heads, each message delivered. */
function nextTurnDrafts(
  pending: readonly AgentMessage[],
  heads: QueueHeads,
  state: SessionState,
  ctx: DecideContext,
): DraftEvent[] {
  const events: DraftEvent[] = [{ id: ctx.newId(), body: { type: "turn_start" } }];
  if (pending.length === 0) return events;
  events.push({ id: ctx.newId(), body: drainUpdate(state.status.queues, heads) });
  for (const message of pending) {
    events.push({ id: ctx.newId(), body: { type: "message_start", message } });
    events.push({ id: ctx.newId(), body: { type: "message_end", message } });
  }
  return events;
}
