// One run of the session engine: the run's loop state and config from the fold, the harness's
// turn callbacks (queue polls, drains, `prepareNextTurn`), and the run's sink, which flushes pending
// writes after `turn_end` and before `agent_end`.
import type { AgentMessage } from "@fleet/protocol";
import type { DraftEvent } from "../session-core/drafts.js";
import {
  type ActiveRun,
  activeToolsOf,
  configNow,
  type EngineCore,
  engineModelOf,
  NONE,
  nothingPolled,
  type RunResult,
  type SessionSettings,
  settingsOf,
} from "./engine-core.js";
import { announceDrain, decideNotingWrites, flushWrites, poll } from "./engine-queues.js";
import { sinkEmit, sinkEmitDecided, sinkEmitDecidedNow, sinkIdle } from "./event-sink.js";
import type { ResumePoint } from "./resume-point.js";
import { runContinuation, runPrompt, runResumed } from "./run-agent-loop.js";
import { abortWatch, type LoopState, type RunScope, type Sink } from "./run-scope.js";
import type { EngineModel, LoopConfig, LoopEventBody, NextTurnUpdate, TurnContext } from "./types.js";

/** What a run does: data, not a closure per run (the run's code is module functions). */
export type RunBody =
  | { kind: "prompt"; messages: readonly AgentMessage[]; skipInitialSteeringPoll: boolean }
  | { kind: "continuation" }
  | { kind: "resumed"; point: ResumePoint };

export function runBody(body: RunBody, loop: LoopState, run: RunScope): Promise<AgentMessage[]> {
  switch (body.kind) {
    case "prompt":
      return runPrompt(body.messages, loop, run, body.skipInitialSteeringPoll);
    case "continuation":
      return runContinuation(loop, run);
    case "resumed":
      return runResumed(body.point, loop, run);
  }
}

export async function startRun(
  core: EngineCore,
  runSink: Sink,
  runId: string | undefined,
  body: RunBody,
  runMessages: readonly AgentMessage[] = NONE,
  aborted = false,
): Promise<RunResult> {
  const id = runId ?? core.ports.newId();
  const controller = new AbortController();
  if (aborted) controller.abort();
  const abort = abortWatch(controller.signal, { attach: false });
  const active: ActiveRun = { runId: id, controller, abort, idle: undefined };
  core.active = active;
  core.sink.runId = id;
  core.runDirty = false;
  core.flushedMessages.length = 0;

  const settings = settingsOf(core);
  const model = engineModelOf(core, settings.model);
  const loop: LoopState = {
    context: {
      systemPrompt: settings.config.systemPrompt,
      messages: settings.messages.slice(),
      tools: activeToolsOf(core, settings.activeTools),
    },
    config: shellLoopConfig(core, model, settings),
    model,
    thinkingLevel: settings.thinkingLevel,
    newMessages: runMessages.slice(),
  };
  const run: RunScope = { ports: core.ports, sink: runSink, signal: controller.signal, abort };
  let result: RunResult;
  try {
    result = { status: "completed", runId: id, messages: await runBody(body, loop, run) };
  } catch (error) {
    result = { status: "emit_failed", runId: id, error: core.sink.failed ?? (error as Error) };
  }
  core.active = undefined;
  core.sink.runId = undefined;
  core.polled = nothingPolled();
  if (active.idle) for (const resolve of active.idle) resolve();
  const session = core.session;
  if (session.pendingWrites.length > 0 && !core.sink.failed && !session.status.isStreaming) {
    try {
      await flushWrites(core);
    } catch {
      // emit failed while flushing after the run: the shell is dead; the result still stands.
    }
  }
  return result;
}

/** Harness `prepareNextTurn`: settings and messages flushed since the last turn apply from now on; then the user hook. */
export function prepareNextTurn(
  core: EngineCore,
  turn: TurnContext,
): NextTurnUpdate | undefined | Promise<NextTurnUpdate | undefined> {
  let update: NextTurnUpdate | undefined;
  if (core.runDirty) {
    core.runDirty = false;
    const settings = settingsOf(core);
    update = {
      context: {
        systemPrompt: settings.config.systemPrompt,
        messages: [...turn.context.messages, ...core.flushedMessages],
        tools: activeToolsOf(core, settings.activeTools),
      },
      model: engineModelOf(core, settings.model),
      thinkingLevel: settings.thinkingLevel,
    };
    core.flushedMessages.length = 0;
  }
  const hook = core.hooks.prepareNextTurn;
  if (!hook) return update;
  return Promise.resolve(hook(update?.context ? { ...turn, context: update.context } : turn)).then((own) => {
    if (!own) return update;
    return {
      ...update,
      ...(own.context ? { context: own.context } : {}),
      ...(own.model ? { model: own.model } : {}),
      ...(own.thinkingLevel ? { thinkingLevel: own.thinkingLevel } : {}),
    };
  });
}

/** A run's loop config: the session's settings and hooks, with the queue and turn callbacks of the shell. */
export interface ShellLoopConfig extends LoopConfig {
  readonly core: EngineCore;
}

/** A literal (one fixed hidden class for every run), its callbacks module functions. */
export function shellLoopConfig(core: EngineCore, model: EngineModel, settings: SessionSettings): ShellLoopConfig {
  const hooks = core.hooks;
  return {
    core,
    model,
    thinkingLevel: settings.thinkingLevel,
    toolExecution: settings.config.toolExecution,
    maxTokens: core.maxTokens,
    sessionId: core.sessionId,
    transformContext: hooks.transformContext,
    convertToLlm: hooks.convertToLlm,
    beforeToolCall: hooks.beforeToolCall,
    afterToolCall: hooks.afterToolCall,
    shouldStopAfterTurn: hooks.shouldStopAfterTurn,
    autoCompaction: core.autoCompaction,
    prepareNextTurn: shellPrepareNextTurn,
    getSteeringMessages: shellSteering,
    getFollowUpMessages: shellFollowUps,
    beforeInject: shellBeforeInject,
  };
}

export function shellPrepareNextTurn(this: ShellLoopConfig, turn: TurnContext) {
  return prepareNextTurn(this.core, turn);
}

export function shellSteering(this: ShellLoopConfig): AgentMessage[] {
  return poll(this.core, "steer", configNow(this.core).steeringMode);
}

export function shellFollowUps(this: ShellLoopConfig): AgentMessage[] {
  return poll(this.core, "followUp", configNow(this.core).followUpMode);
}

export function shellBeforeInject(this: ShellLoopConfig): Promise<void> | undefined {
  return announceDrain(this.core);
}

/** The run's view of the sink: pending writes flush after `turn_end` and before `agent_end`. */
export interface RunSink extends Sink {
  readonly core: EngineCore;
}

/** A literal (one fixed hidden class for every engine), its methods module functions. */
export const runSinkOf = (core: EngineCore): RunSink => ({
  core,
  emit: runSinkEmit,
  failed: runSinkFailed,
  emitDecided: runSinkEmitDecided,
  emitDecidedNow: runSinkEmitDecidedNow,
});

export function runSinkEmitDecided(this: RunSink, decide: () => readonly DraftEvent[]): Promise<readonly DraftEvent[]> {
  const core = this.core;
  return sinkEmitDecided(core.sink, () => decideNotingWrites(core, decide));
}

export function runSinkEmitDecidedNow<A>(
  this: RunSink,
  decide: (arg: A) => readonly DraftEvent[],
  arg: A,
): Promise<void> {
  const core = this.core;
  // Decided now with no write pending (a delta's usual case): none can be carried out.
  if (core.session.pendingWrites.length === 0 && sinkIdle(core.sink)) return sinkEmitDecidedNow(core.sink, decide, arg);
  return sinkEmitDecidedNow(core.sink, (a: A) => decideNotingWrites(core, () => decide(a)), arg);
}

export function runSinkFailed(this: RunSink): Error | undefined {
  return this.core.sink.failed;
}

export function runSinkEmit(this: RunSink, body: LoopEventBody): Promise<void> {
  const core = this.core;
  if ((body.type !== "turn_end" && body.type !== "agent_end") || core.session.pendingWrites.length === 0) {
    return sinkEmit(core.sink, body);
  }
  if (body.type === "agent_end") return flushWrites(core).then(() => sinkEmit(core.sink, body));
  return sinkEmit(core.sink, body).then(() => flushWrites(core));
}
