// The turns of a run (pi's runLoop): turn_start, the injected messages, the LLM call (with automatic
// compaction around it), the tool batch, turn_end with pi 0.75's turn hooks, the queue polls and
// agent_end. Used by every kind of run (`./run-agent-loop.ts`: prompt, continuation, resumption).
import type { AgentMessage, AssistantMessage, ToolResultMessage } from "@fleet/protocol";
import { executeToolBatch } from "./execute-tool-batch.js";
import { isPromise, type LoopState, RESOLVED, type RunScope } from "./run-scope.js";
import { streamAssistantResponse } from "./stream-assistant.js";
import type { LoopConfig, TurnContext } from "./types.js";

export interface DriveState {
  pending: AgentMessage[];
  hasMoreToolCalls: boolean;
  /** True while the current turn's `turn_start` is already out (the first turn of a run). */
  inTurn: boolean;
  /** The next LLM call retries one that overflowed: no compaction before it, no second recovery. */
  overflowRetry?: boolean;
}

export const NONE: AgentMessage[] = [];

export function isTerminal(m: AssistantMessage): boolean {
  return m.stopReason === "error" || m.stopReason === "aborted";
}

export function hasToolCalls(m: AssistantMessage): boolean {
  for (const block of m.content) if (block.type === "toolCall") return true;
  return false;
}

/** Emits and waits only when the sink did not accept the event at once. */
export function send(run: RunScope, body: Parameters<RunScope["sink"]["emit"]>[0]): Promise<void> | undefined {
  const accepted = run.sink.emit(body);
  return accepted === RESOLVED ? undefined : accepted;
}

/** pi's runLoop: inner loop over turns and steering, outer loop over follow-ups. */
export async function drive(loop: LoopState, run: RunScope, state: DriveState): Promise<void> {
  while (true) {
    while (state.hasMoreToolCalls || state.pending.length > 0) {
      if (state.inTurn) state.inTurn = false;
      else {
        const sent = send(run, { type: "turn_start" });
        if (sent) await sent;
      }
      if (state.pending.length > 0) {
        await inject(state.pending, loop, run);
        state.pending = [];
      }

      const message = await callLlm(loop, run, state.overflowRetry === true);
      state.overflowRetry = false;
      loop.newMessages.push(message);
      if (isTerminal(message)) {
        await run.sink.emit({ type: "turn_end", message, toolResults: [] });
        return endRun(loop, run);
      }

      let toolResults: ToolResultMessage[] = [];
      state.hasMoreToolCalls = false;
      if (hasToolCalls(message)) {
        const batch = await executeToolBatch(loop.context, message, loop.config, run);
        toolResults = batch.messages;
        state.hasMoreToolCalls = !batch.terminate;
        for (const result of toolResults) {
          loop.context.messages.push(result);
          loop.newMessages.push(result);
        }
      }
      const pending = await completeTurn(message, toolResults, loop, run);
      if (pending === "ended") return;
      state.pending = pending;
    }
    if (run.signal?.aborted) return endRun(loop, run);
    const polled = poll(loop.config, "getFollowUpMessages");
    const followUps = isPromise(polled) ? await polled : polled;
    if (followUps.length === 0) break;
    state.pending = followUps;
  }
  return endRun(loop, run);
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
 * `turn_end`, then (Fleet) the abort check between turns, then pi 0.75's `prepareNextTurn`,
 * `shouldStopAfterTurn` and the steering poll. Returns the polled messages, or "ended".
 */
export async function completeTurn(
  message: AssistantMessage,
  toolResults: ToolResultMessage[],
  loop: LoopState,
  run: RunScope,
): Promise<AgentMessage[] | "ended"> {
  const sent = send(run, { type: "turn_end", message, toolResults });
  if (sent) await sent;
  if (run.signal?.aborted) {
    await endRun(loop, run);
    return "ended";
  }
  const turn: TurnContext = { message, toolResults, context: loop.context, newMessages: loop.newMessages };
  if (loop.config.prepareNextTurn) {
    const pending = loop.config.prepareNextTurn(turn);
    const update = isPromise(pending) ? await pending : pending;
    if (update) {
      if (update.context) loop.context = update.context;
      if (update.model) loop.model = update.model;
      if (update.thinkingLevel) loop.thinkingLevel = update.thinkingLevel;
      turn.context = loop.context;
    }
  }
  if (loop.config.shouldStopAfterTurn) {
    const pending = loop.config.shouldStopAfterTurn(turn);
    if (isPromise(pending) ? await pending : pending) {
      await endRun(loop, run);
      return "ended";
    }
  }
  if (run.signal?.aborted) {
    await endRun(loop, run);
    return "ended";
  }
  return poll(loop.config, "getSteeringMessages");
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
  return run.sink.emit({ type: "agent_end", messages: loop.newMessages });
}
