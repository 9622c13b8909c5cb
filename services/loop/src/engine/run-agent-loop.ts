// pi's stateless agent loop (agentLoop / agentLoopContinue, 0.73 + the 0.75 hooks), plus resuming an
// interrupted run. Every effect goes through the run's ports.
import type { AgentMessage, AssistantMessage } from "@fleet/protocol";
import { boundaryAfter, hasToolCalls, interruptedErrorMessage, turnBoundary } from "../session-core/turn-boundary.js";
import { EventSink } from "./event-sink.js";
import { executeToolBatch, type PriorToolCall } from "./execute-tool-batch.js";
import { abortedAssistant, failureMessage, finishedContent } from "./messages.js";
import type { ResumePoint } from "./resume-point.js";
import { abortWatch, isPromise, type LoopState, type RunScope } from "./run-scope.js";
import { completeTurn, crossBoundary, drive, endRun, inject, NONE, nextTurn, poll, send } from "./run-turns.js";
import type { EnginePorts, LoopConfig, LoopContext } from "./types.js";

/**
 * A prompt run: `agent_start`, `turn_start`, the prompt messages, the initial steering poll (unless
 * skipped: `continue()` from an assistant tail), then turns until the run ends.
 * Never rejects except when `emit` fails (see `guardRun`).
 */
export function runPrompt(
  prompts: readonly AgentMessage[],
  loop: LoopState,
  run: RunScope,
  skipInitialSteeringPoll = false,
): Promise<AgentMessage[]> {
  return guardRun(loop, run, promptRun(prompts, loop, run, skipInitialSteeringPoll));
}

async function promptRun(
  prompts: readonly AgentMessage[],
  loop: LoopState,
  run: RunScope,
  skipInitialSteeringPoll: boolean,
): Promise<void> {
  const started = send(run, { type: "agent_start" });
  if (started) await started;
  const turn = send(run, { type: "turn_start" });
  if (turn) await turn;
  if (prompts.length > 0) await inject(prompts, loop, run);
  const polled = skipInitialSteeringPoll ? NONE : poll(loop.config, "getSteeringMessages");
  const pending = isPromise(polled) ? await polled : polled;
  await drive(loop, run, { pending, inTurn: true });
}

/** A continuation run (pi's agentLoopContinue): no prompt messages, initial steering poll. */
export function runContinuation(loop: LoopState, run: RunScope): Promise<AgentMessage[]> {
  return guardRun(loop, run, continuationRun(loop, run));
}

async function continuationRun(loop: LoopState, run: RunScope): Promise<void> {
  await run.sink.emit({ type: "agent_start" });
  await run.sink.emit({ type: "turn_start" });
  const pending = await poll(loop.config, "getSteeringMessages");
  await drive(loop, run, { pending, inTurn: true });
}

/** Carries on an interrupted run from `point` (see `ResumePoint`), after a `run_resumed` event. */
export function runResumed(interrupted: ResumePoint, loop: LoopState, run: RunScope): Promise<AgentMessage[]> {
  return guardRun(loop, run, resumedRun(interrupted, loop, run));
}

async function resumedRun(interrupted: ResumePoint, loop: LoopState, run: RunScope): Promise<void> {
  await run.sink.emit({ type: "run_resumed", runId: interrupted.runId, reason: interrupted.reason });
  const auto = loop.config.autoCompaction;
  const point = auto ? await auto.finishOpen(interrupted, loop, run) : interrupted;
  switch (point.at) {
    case "awaiting_llm": {
      const open = point.openMessage;
      if (open) {
        await run.sink.emit({ type: "message_end", message: open });
        loop.context.messages.push(open);
        loop.newMessages.push(open);
      }
      return drive(loop, run, {
        pending: point.undelivered?.slice() ?? [],
        inTurn: point.turnOpen,
        overflowRetry: point.overflowRetry === true,
      });
    }
    case "streaming": {
      // An abort accepted before the interruption lands where it would have: the message ends aborted.
      const aborted = run.signal?.aborted === true;
      const closed: AssistantMessage = aborted
        ? abortedAssistant(point.partial, run.ports.now())
        : {
            ...point.partial,
            content: finishedContent(point.partial.content),
            stopReason: "error",
            errorMessage: interruptedErrorMessage(point.reason),
          };
      await run.sink.emit({ type: "message_end", message: closed });
      loop.context.messages.push(closed);
      loop.newMessages.push(closed);
      // A turn boundary like any other, decided on the fold: a cut close is not terminal (its call
      // is made again, and an abort accepted from here on ends that call aborted), writes are
      // flushed at it and steering applies to the retried call. A message closed aborted ends the run.
      const pending = await completeTurn(closed, [], loop, run, boundaryAfter(closed, false));
      if (pending === "ended") return;
      if (pending === "end_run") return endRun(loop, run);
      return drive(loop, run, nextTurn(pending));
    }
    case "tools_pending": {
      const prior = new Map<string, PriorToolCall>();
      for (const id of point.startedIds ?? []) prior.set(id, { started: true });
      for (const [id, outcome] of point.endedResults ?? []) prior.set(id, { ...prior.get(id), outcome });
      for (const message of point.finishedResults ?? []) {
        prior.set(message.toolCallId, { ...prior.get(message.toolCallId), message });
      }
      const batch = await executeToolBatch(loop.context, point.assistantMessage, loop.config, run, prior);
      const fresh = batch.messages.filter((m) => prior.get(m.toolCallId)?.message !== m);
      for (const m of fresh) {
        loop.context.messages.push(m);
        loop.newMessages.push(m);
      }
      const boundary = turnBoundary(false, !batch.terminate);
      const pending = await completeTurn(point.assistantMessage, batch.messages, loop, run, boundary);
      if (pending === "ended") return;
      if (pending === "end_run") return endRun(loop, run);
      return drive(loop, run, nextTurn(pending));
    }
    case "awaiting_turn_end": {
      // Cut between an overflowed call and its compaction: recover as the call's own turn would have.
      if (auto && (await auto.recoverOverflow(point.assistantMessage, loop, run))) {
        return drive(loop, run, { pending: NONE, inTurn: true, overflowRetry: true });
      }
      // A cut close whose `turn_end` was cut too: its call is still made again.
      const boundary = boundaryAfter(point.assistantMessage, false);
      const pending = await completeTurn(point.assistantMessage, [], loop, run, boundary);
      if (pending === "ended") return;
      if (pending === "end_run") return endRun(loop, run);
      return drive(loop, run, nextTurn(pending));
    }
    case "between_turns": {
      // No turn hooks: they were asked after this `turn_end`, or the run was cut before they answered.
      const hasMoreToolCalls = point.hasMoreToolCalls ?? hasToolCalls(point.lastAssistant);
      const boundary = boundaryAfter(point.lastAssistant, hasMoreToolCalls, false);
      const pending = await crossBoundary(boundary, point.lastAssistant, [], loop, run);
      if (pending === "ended") return;
      if (pending === "end_run") return endRun(loop, run);
      return drive(loop, run, nextTurn(pending));
    }
  }
}

/**
 * pi 0.75's run failure path: anything the run's body throws (a hook, a streamFn that broke its
 * contract, an engine bug) becomes an assistant message — one empty text block, stopReason
 * `aborted` if the signal aborted else `error`, errorMessage = the thrown message — emitted with
 * `message_start`, `message_end`, `turn_end`, then `agent_end {messages: [failure]}`.
 * When `emit` itself failed, nothing more is emitted and the emit error is rethrown.
 * `body` is the run's body, already started (module functions, not closures: their optimised code
 * outlives each run's objects).
 */
async function guardRun(loop: LoopState, run: RunScope, body: Promise<void>): Promise<AgentMessage[]> {
  try {
    await body;
    return loop.ended ?? loop.newMessages;
  } catch (error) {
    const failed = run.sink.failed();
    if (failed) throw failed;
    if (loop.ended) return loop.ended;
    const failure = failureMessage(loop.model, run.signal?.aborted === true, error, run.ports.now());
    loop.context.messages.push(failure);
    await run.sink.emit({ type: "message_start", message: failure });
    await run.sink.emit({ type: "message_end", message: failure });
    await run.sink.emit({ type: "turn_end", message: failure, toolResults: [] });
    loop.ended = [failure];
    await run.sink.emit({ type: "agent_end", messages: [failure] });
    return [failure];
  }
}

// ---- Stateless entry points (pi's agentLoop / agentLoopContinue) --------------------------------

export interface LoopOptions {
  signal?: AbortSignal;
  /** The session's leaf before the run (parent of its first entry). Default `null`. */
  leafId?: string | null;
  /** Default: a fresh id from `ports.newId()`. */
  runId?: string;
}

export interface LoopResult {
  runId: string;
  /** What `agent_end` carried. */
  messages: AgentMessage[];
  /** The leaf after the run's last entry event. */
  leafId: string | null;
}

function scope(ports: EnginePorts, options: LoopOptions): { run: RunScope; sink: EventSink; runId: string } {
  const sink = new EventSink({ emit: ports.emit, newId: ports.newId, leafId: options.leafId ?? null });
  const runId = options.runId ?? ports.newId();
  sink.runId = runId;
  return { run: { ports, sink, signal: options.signal, abort: abortWatch(options.signal) }, sink, runId };
}

function initialState(
  context: LoopContext,
  config: LoopConfig,
  runMessages: readonly AgentMessage[] = NONE,
): LoopState {
  return {
    context: { ...context, messages: context.messages.slice() },
    config,
    model: config.model,
    thinkingLevel: config.thinkingLevel,
    newMessages: runMessages.slice(),
  };
}

/**
 * pi's `runAgentLoop`: starts a run with `prompts`. `context` is not modified. Rejects only when
 * `ports.emit` throws (with that error).
 */
export async function agentLoop(
  prompts: readonly AgentMessage[],
  context: LoopContext,
  config: LoopConfig,
  ports: EnginePorts,
  options: LoopOptions = {},
): Promise<LoopResult> {
  const { run, sink, runId } = scope(ports, options);
  const messages = await runPrompt(prompts, initialState(context, config), run);
  return { runId, messages, leafId: sink.leafId };
}

/**
 * pi's `runAgentLoopContinue`. Throws (a programmer mistake, pi's texts) when the context is empty
 * or ends with an assistant message.
 */
export async function agentLoopContinue(
  context: LoopContext,
  config: LoopConfig,
  ports: EnginePorts,
  options: LoopOptions = {},
): Promise<LoopResult> {
  const last = context.messages.at(-1);
  if (!last) throw new Error("Cannot continue: no messages in context");
  if (last.role === "assistant") throw new Error("Cannot continue from message role: assistant");
  const { run, sink, runId } = scope(ports, options);
  const messages = await runContinuation(initialState(context, config), run);
  return { runId, messages, leafId: sink.leafId };
}

/** Resumes an interrupted run statelessly; `context` holds the session's messages as logged. */
export async function agentLoopResume(
  point: ResumePoint,
  context: LoopContext,
  config: LoopConfig,
  ports: EnginePorts,
  options: Omit<LoopOptions, "runId"> = {},
): Promise<LoopResult> {
  const { run, sink, runId } = scope(ports, { ...options, runId: point.runId });
  const loop = initialState(context, config, point.runMessages);
  const messages = await runResumed(point, loop, run);
  return { runId, messages, leafId: sink.leafId };
}
