// A run's turn boundaries and its end (pi's runLoop after a turn's results): `turn_end`, where the
// run goes once pi 0.75's turn hooks answered and the queues were polled, and `agent_end`. Pure:
// the abort, the hooks' answer and the polled messages come in as facts. Shared by the engine's
// turns (`../engine/run-turns.ts`, which asks the hooks and polls its queues as the step says) and
// the runtime core (`../decide/decide-input.ts`, which takes the facts from the fold).
import type { AgentMessage, AssistantMessage, EventDraft, ToolResultMessage } from "@fleet/protocol";

/** A message that ends its run with its turn (stopReason `error` or `aborted`). */
export function isTerminal(m: AssistantMessage): boolean {
  return m.stopReason === "error" || m.stopReason === "aborted";
}

const INTERRUPTED = "Run interrupted while streaming (";

/** errorMessage of a message a resumed run closed because its stream was cut. */
export const interruptedErrorMessage = (reason: string): string => `${INTERRUPTED}${reason})`;

/**
 * A message a resumed run closed because its stream was cut (stopReason `error`, errorMessage
 * `interruptedErrorMessage`): its call is made again, so it does not end the run.
 */
export function isCutClose(m: AssistantMessage): boolean {
  return m.stopReason === "error" && m.errorMessage?.startsWith(INTERRUPTED) === true;
}

/**
 * An error text from outside the loop (a provider's error, a thrown error) as an errorMessage: a
 * text that begins as `interruptedErrorMessage` does gets `Error: ` before it, so that only a resumed
 * run's close is ever read as a cut close (one read as such would make its call again, forever).
 */
export function foreignErrorText(text: string): string {
  return text.startsWith(INTERRUPTED) ? `Error: ${text}` : text;
}

export function hasToolCalls(m: AssistantMessage): boolean {
  for (const block of m.content) if (block.type === "toolCall") return true;
  return false;
}

/**
 * pi's `hasMoreToolCalls` as the log tells it after a turn: the turn ran tool calls and has their
 * results (a batch that asked to terminate is not in the log; a resumed run calls the LLM again).
 */
export function hasMoreToolCallsAfter(assistant: AssistantMessage, toolResults: readonly ToolResultMessage[]): boolean {
  return hasToolCalls(assistant) && toolResults.length > 0;
}

export function turnEndBody(message: AssistantMessage, toolResults: ToolResultMessage[]): EventDraft {
  return { type: "turn_end", message, toolResults };
}

/** `agent_end`: `messages` is everything the run added, in order. */
export function agentEndBody(messages: AgentMessage[]): EventDraft {
  return { type: "agent_end", messages };
}

/**
 * What is known at a turn boundary (after `turn_end`, or a resumed run's position between turns).
 * The facts are learnt in this order, each only while the run still goes on: the abort, the turn
 * hooks' answer (`prepareNextTurn`, then `shouldStopAfterTurn`), the steering poll, the follow-up
 * poll. `undefined`: not learnt yet.
 */
export interface TurnBoundary {
  /** The turn's message ends the run (`isTerminal`, except a cut stream that is called again). */
  terminal: boolean;
  /** The turn leaves tool results for the LLM (pi's `hasMoreToolCalls`): a next turn follows. */
  hasMoreToolCalls: boolean;
  /**
   * The turn's LLM call is made again (a resumed run's cut stream, closed as an error). An abort
   * does not end the run here: the next turn's call ends aborted at once, as pi's call after an
   * abort does, so the run's last message says it was aborted.
   */
  retry?: boolean;
  /** The run is aborted (the engine reads its signal afresh before each step). */
  aborted: boolean;
  /** `shouldStopAfterTurn`'s answer; `false` at a boundary that asks no hooks (a resumed run). */
  stop: boolean | undefined;
  steering: readonly AgentMessage[] | undefined;
  followUps: readonly AgentMessage[] | undefined;
}

/** The next step at a boundary: a fact to learn, or where the run goes. */
export type BoundaryStep =
  | { next: "end_run" }
  | { next: "ask_turn_hooks" }
  | { next: "poll"; queue: "steer" | "followUp" }
  /** A next turn, delivering `pending` (the polled messages; none after a tool batch). */
  | { next: "turn"; pending: readonly AgentMessage[] };

const END_RUN: BoundaryStep = { next: "end_run" };
const ASK_TURN_HOOKS: BoundaryStep = { next: "ask_turn_hooks" };
const POLL_STEERING: BoundaryStep = { next: "poll", queue: "steer" };
const POLL_FOLLOW_UPS: BoundaryStep = { next: "poll", queue: "followUp" };
const NO_MESSAGES: readonly AgentMessage[] = [];

/** A boundary with nothing learnt yet. `stop: false` for one that asks no turn hooks. */
export function turnBoundary(terminal: boolean, hasMoreToolCalls: boolean, stop?: false): TurnBoundary {
  return { terminal, hasMoreToolCalls, aborted: false, stop, steering: undefined, followUps: undefined };
}

/** The boundary after a resumed run's cut stream: not terminal, and its call is made again (`retry`). */
export function retryBoundary(stop?: false): TurnBoundary {
  return { ...turnBoundary(false, true, stop), retry: true };
}

/**
 * The boundary after a turn whose assistant message is `m`: a `retryBoundary` after a cut close
 * (`isCutClose`, wherever the log resumes it), else terminal as `isTerminal` says.
 */
export function boundaryAfter(m: AssistantMessage, hasMoreToolCalls: boolean, stop?: false): TurnBoundary {
  return isCutClose(m) ? retryBoundary(stop) : turnBoundary(isTerminal(m), hasMoreToolCalls, stop);
}

/**
 * pi's order after a turn: a terminal message ends the run; an abort ends it before the hooks are
 * asked, before steering is polled, and before follow-ups are polled (not once a turn was decided),
 * except at a `retry` boundary, where it starts the retried call's turn with the steering polled
 * so far; `shouldStopAfterTurn` true ends it; steering messages or tool results start the next
 * turn; else follow-ups do; else the run ends.
 */
export function stepTurnBoundary(b: TurnBoundary): BoundaryStep {
  if (b.terminal) return END_RUN;
  if (b.aborted && b.retry === true && b.stop !== true) return { next: "turn", pending: b.steering ?? NO_MESSAGES };
  if (b.stop === undefined) return b.aborted ? END_RUN : ASK_TURN_HOOKS;
  if (b.stop) return END_RUN;
  if (b.steering === undefined) return b.aborted ? END_RUN : POLL_STEERING;
  if (b.steering.length > 0 || b.hasMoreToolCalls) return { next: "turn", pending: b.steering };
  if (b.followUps === undefined) return b.aborted ? END_RUN : POLL_FOLLOW_UPS;
  return b.followUps.length > 0 ? { next: "turn", pending: b.followUps } : END_RUN;
}
