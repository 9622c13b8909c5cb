// The turns of a run (pi's runLoop): turn_start, the injected messages, the LLM call (with automatic
// compaction around it), the tool batch, then the turn's boundary: `turn_end`, pi 0.75's turn hooks
// and the queue polls, asked in the order the pure `stepTurnBoundary` (`../session-core/`) says,
// until it starts a turn or ends the run with `agent_end`. Used by every kind of run
// (`./run-agent-loop.ts`: prompt, continuation, resumption).
import type { AgentMessage, AssistantMessage, ToolResultMessage } from "@fleet/protocol";
import type { DraftEvent } from "../session-core/drafts.js";
import {
  agentEndBody,
  hasToolCalls,
  isTerminal,
  stepTurnBoundary,
  type TurnBoundary,
  turnBoundary,
  turnEndBody,
} from "../session-core/turn-boundary.js";
import { executeToolBatch } from "./execute-tool-batch.js";
import { emitDecision, isPromise, type LoopState, RESOLVED, type RunScope } from "./run-scope.js";
import { streamAssistantResponse } from "./stream-assistant.js";
import type { LoopConfig, LoopEventBody, NextTurnUpdate, TurnContext } from "./types.js";

export interface DriveState {
  /** Messages the next turn delivers before its LLM call (the prompt's, polled steering or follow-ups). */
  pending: readonly AgentMessage[];
  /** True while the current turn's `turn_start` is already out (the first turn of a run). */
  inTurn: boolean;
  /** The next LLM call retries one that overflowed: no compaction before it, no second recovery. */
  overflowRetry?: boolean;
}

export const NONE: AgentMessage[] = [];

/** Emits and waits only when the sink did not accept the event at once. */
export function send(run: RunScope, body: Parameters<RunScope["sink"]["emit"]>[0]): Promise<void> | undefined {
  const accepted = run.sink.emit(body);
  return accepted === RESOLVED ? undefined : accepted;
}

/** pi's runLoop from the start of a turn: turns, each closed by its boundary (`completeTurn`), until one ends the run. */
export async function drive(loop: LoopState, run: RunScope, state: DriveState): Promise<void> {
  while (true) {
    if (state.inTurn) state.inTurn = false;
    else {
      const sent = send(run, { type: "turn_start" });
      if (sent) await sent;
    }
    if (state.pending.length > 0) {
      await inject(state.pending, loop, run);
      state.pending = NONE;
    }

    const message = await callLlm(loop, run, state.overflowRetry === true);
    state.overflowRetry = false;
    loop.newMessages.push(message);
    const terminal = isTerminal(message);
    let toolResults: ToolResultMessage[] = [];
    let hasMoreToolCalls = false;
    if (!terminal && hasToolCalls(message)) {
      const batch = await executeToolBatch(loop.context, message, loop.config, run);
      toolResults = batch.messages;
      hasMoreToolCalls = !batch.terminate;
      for (const result of toolResults) {
        loop.context.messages.push(result);
        loop.newMessages.push(result);
      }
    }
    // `completeTurn`, inline: one async frame less per turn.
    const ended = emitTurnEnd(message, toolResults, loop, run);
    if (ended !== undefined && (await ended)) return;
    const next = await crossBoundary(turnBoundary(terminal, hasMoreToolCalls), message, toolResults, loop, run);
    if (next === "end_run") return endRun(loop, run);
    if (next === "ended") return;
    if (next === "turn_started") {
      state.inTurn = true;
      state.pending = NONE;
    } else state.pending = next;
  }
}

/** Where a boundary leaves the run: the next turn's messages (to deliver), or a decided start or end. */
export type BoundaryResult = readonly AgentMessage[] | "end_run" | "ended" | "turn_started";

/** The drive state that carries on from a boundary that started a turn or returned its messages. */
export function nextTurn(next: readonly AgentMessage[] | "turn_started"): DriveState {
  return next === "turn_started" ? { pending: NONE, inTurn: true } : { pending: next, inTurn: false };
}

/**
 * One LLM call with pi coding-agent's automatic compaction around it (when the config has it): a
 * threshold compaction before the call, and after a context overflow an overflow compaction and one
 * retry of the call in the same turn (the overflowed message stays in the run's messages).
 */
async function callLlm(loop: LoopState, run: RunScope, isOverflowRetry: boolean): Promise<AssistantMessage> {
  const auto = loop.config.autoCompaction;
  if (!auto) return streamAssistantResponse(loop, run);
  if (!isOverflowRetry) await auto.beforeCall(loop, run);
  const message = await streamAssistantResponse(loop, run);
  if (isOverflowRetry || message.stopReason !== "error") return message;
  if (!(await auto.recoverOverflow(message, loop, run))) return message;
  loop.newMessages.push(message);
  return streamAssistantResponse(loop, run);
}

/**
 * `turn_end`, then the boundary after it (`crossBoundary`). Returns the next turn's messages,
 * "end_run": the caller ends the run (`endRun`), or the fold's decision: "ended" (its `agent_end`
 * went out) or "turn_started" (the next turn's start and messages went out).
 */
export async function completeTurn(
  message: AssistantMessage,
  toolResults: ToolResultMessage[],
  loop: LoopState,
  run: RunScope,
  boundary: TurnBoundary,
): Promise<BoundaryResult> {
  const ended = emitTurnEnd(message, toolResults, loop, run);
  if (ended !== undefined && (await ended)) return "ended";
  return crossBoundary(boundary, message, toolResults, loop, run);
}

/**
 * A turn's `turn_end`: decided on the session's fold when the ports have `decideTurnEnd` (with the
 * writes flushed at it, and `agent_end` when the fold ends the run there), else the engine's own.
 * Resolves true when the run ended (`loop.ended` set to what `agent_end` carried); undefined when
 * the sink accepted the engine's own `turn_end` at once.
 */
function emitTurnEnd(
  message: AssistantMessage,
  toolResults: ToolResultMessage[],
  loop: LoopState,
  run: RunScope,
): Promise<boolean> | undefined {
  const decide = run.ports.decideTurnEnd;
  if (!decide || !run.sink.emitDecided) {
    const sent = send(run, turnEndBody(message, toolResults) as LoopEventBody);
    return sent?.then(notEnded);
  }
  return emitDecision(run, () => decide({ message, toolResults })).then((drafts) => {
    for (const { body } of drafts) {
      if (body.type !== "agent_end") continue;
      loop.ended = body.messages;
      return true;
    }
    return false;
  });
}

const notEnded = (): boolean => false;

/**
 * Learns the facts `stepTurnBoundary` asks for, in its order: the abort (read afresh before each
 * step), pi 0.75's `prepareNextTurn` and `shouldStopAfterTurn`, the steering poll, the follow-up
 * poll. With a `decideTurnBoundary` port, the fold decides everything past the
 * hooks (`decideBoundary`); else, or when it decides nothing, the engine polls its queues.
 * Returns the next turn's messages, "end_run" (the caller emits `agent_end`: kept out of this
 * function, whose optimised code would otherwise inline the sink and the fold and be dropped with
 * their per-run hidden classes at every major GC), or the decision's "ended" / "turn_started".
 */
export async function crossBoundary(
  boundary: TurnBoundary,
  message: AssistantMessage,
  toolResults: ToolResultMessage[],
  loop: LoopState,
  run: RunScope,
): Promise<BoundaryResult> {
  let ask = run.ports.decideTurnBoundary !== undefined && run.sink.emitDecided !== undefined;
  while (true) {
    boundary.aborted = run.signal?.aborted === true;
    const step = stepTurnBoundary(boundary);
    if (ask && step.next !== "ask_turn_hooks" && !boundary.aborted) {
      ask = false;
      const outcome = await decideBoundary(boundary.stop === true, loop, run);
      if (outcome) return outcome;
      continue;
    }
    switch (step.next) {
      case "end_run":
        return "end_run";
      case "turn":
        return step.pending;
      case "ask_turn_hooks": {
        const asked = askTurnHooks(message, toolResults, loop);
        boundary.stop = isPromise(asked) ? await asked : asked;
        break;
      }
      case "poll": {
        const polled = poll(loop.config, step.queue === "steer" ? "getSteeringMessages" : "getFollowUpMessages");
        const messages = isPromise(polled) ? await polled : polled;
        if (step.queue === "steer") boundary.steering = messages;
        else boundary.followUps = messages;
        break;
      }
    }
  }
}

/**
 * The rest of a boundary decided on the session's fold (`decideTurnBoundary`): its drafts are
 * emitted in the delivery order; the messages they deliver join the run's context and messages.
 * Undefined when the fold decided nothing.
 */
function decideBoundary(stop: boolean, loop: LoopState, run: RunScope): Promise<"ended" | "turn_started" | undefined> {
  const decide = run.ports.decideTurnBoundary as (stop: boolean) => readonly DraftEvent[] | undefined;
  return emitDecision(run, () => decide(stop)).then((drafts) => {
    if (drafts.length === 0) return undefined;
    for (const { body } of drafts) {
      if (body.type !== "agent_end") continue;
      loop.ended = body.messages;
      return "ended";
    }
    for (const { body } of drafts) {
      if (body.type !== "message_end") continue;
      loop.context.messages.push(body.message);
      loop.newMessages.push(body.message);
    }
    return "turn_started";
  });
}

/** pi 0.75's turn hooks: `prepareNextTurn` (its update applied to the run), then `shouldStopAfterTurn`. */
function askTurnHooks(
  message: AssistantMessage,
  toolResults: ToolResultMessage[],
  loop: LoopState,
): boolean | Promise<boolean> {
  const turn: TurnContext = { message, toolResults, context: loop.context, newMessages: loop.newMessages };
  if (!loop.config.prepareNextTurn) return shouldStop(turn, loop);
  const pending = loop.config.prepareNextTurn(turn);
  if (!isPromise(pending)) {
    applyNextTurn(pending, turn, loop);
    return shouldStop(turn, loop);
  }
  return pending.then((update) => {
    applyNextTurn(update, turn, loop);
    return shouldStop(turn, loop);
  });
}

function applyNextTurn(update: NextTurnUpdate | undefined, turn: TurnContext, loop: LoopState): void {
  if (!update) return;
  if (update.context) loop.context = update.context;
  if (update.model) loop.model = update.model;
  if (update.thinkingLevel) loop.thinkingLevel = update.thinkingLevel;
  turn.context = loop.context;
}

function shouldStop(turn: TurnContext, loop: LoopState): boolean | Promise<boolean> {
  if (!loop.config.shouldStopAfterTurn) return false;
  const answer = loop.config.shouldStopAfterTurn(turn);
  return isPromise(answer) ? answer.then(Boolean) : Boolean(answer);
}

export async function inject(messages: readonly AgentMessage[], loop: LoopState, run: RunScope): Promise<void> {
  const announced = loop.config.beforeInject?.(messages);
  if (announced) await announced;
  for (const message of messages) {
    const started = send(run, { type: "message_start", message });
    if (started) await started;
    const ended = send(run, { type: "message_end", message });
    if (ended) await ended;
    loop.context.messages.push(message);
    loop.newMessages.push(message);
  }
}

/** A queue poll (called as a method of the config); no microtask for a synchronous source. */
export function poll(
  config: LoopConfig,
  source: "getSteeringMessages" | "getFollowUpMessages",
): AgentMessage[] | Promise<AgentMessage[]> {
  if (!config[source]) return NONE;
  const polled = config[source]();
  return isPromise(polled) ? polled.then((m) => m ?? NONE) : (polled ?? NONE);
}

export function endRun(loop: LoopState, run: RunScope): Promise<void> {
  loop.ended = loop.newMessages;
  return run.sink.emit(agentEndBody(loop.newMessages) as LoopEventBody);
}
