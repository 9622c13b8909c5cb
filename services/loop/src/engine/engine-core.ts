// The session engine's state (`EngineCore`, one object literal) and what is read from it: the
// session's settings at its leaf (from the fold), the active tools, the model, the abort of a run.
import {
  type AgentMessage,
  type ContextMessage,
  contextAtLeaf,
  DEFAULT_SESSION_CONFIG,
  type ModelRef,
  type QueueKind,
  type SessionConfig,
  type SessionState,
  type ThinkingLevel,
} from "@fleet/protocol";
import type { Rejection } from "../session-core/run-refusals.js";
import type { AutoCompaction } from "./auto-compaction.js";
import type { SinkState } from "./event-sink.js";
import type { AbortWatch } from "./run-scope.js";
import type { EngineHooks, EngineModel, EnginePorts, ToolDefinition } from "./types.js";

export interface ActiveRun {
  runId: string;
  controller: AbortController;
  abort: AbortWatch;
  /** Resolved when the run settled (created on demand by `waitForIdle`). */
  idle: (() => void)[] | undefined;
}

/** Settings and context of the session at its leaf, from the fold (read-only: valid until the next fold). */
export interface SessionSettings {
  config: SessionConfig;
  messages: readonly ContextMessage[];
  model: ModelRef;
  thinkingLevel: ThinkingLevel;
  activeTools: readonly string[] | null;
}

export const NONE: AgentMessage[] = [];
export const NO_CONTEXT: readonly ContextMessage[] = Object.freeze([]);
/** A fresh "nothing polled" record (a literal: cheaper than a copy of a frozen one). */
export const nothingPolled = (): Record<QueueKind, number> => ({ steer: 0, followUp: 0, nextTurn: 0 });

/**
 * An engine's state: one object literal, so its hidden class outlives every engine (V8 drops the
 * hidden classes of a class's instances, and the optimised code built on them, once no instance
 * survives a few major GCs). The run loop's callbacks work on it through the module functions
 * below; `SessionEngine` is their public face.
 */
export interface EngineCore {
  readonly ports: EnginePorts;
  readonly session: SessionState;
  /** Set right after the core is made (the sink reads the leaf from it). */
  sink: SinkState;
  readonly hooks: EngineHooks;
  readonly modelApi: ((model: ModelRef) => string) | undefined;
  readonly maxTokens: number | undefined;
  readonly sessionId: string | undefined;
  tools: readonly ToolDefinition[];
  active: ActiveRun | undefined;
  /**
   * Messages at the head of each queue that the run polled and has not injected yet (their drain's
   * `queue_update` is not out). Run-local: after a crash they are simply still queued in the log.
   */
  polled: Record<QueueKind, number>;
  /** Writes flushed during the run since the last `prepareNextTurn`. */
  runDirty: boolean;
  flushedMessages: AgentMessage[];
  readonly autoCompaction: AutoCompaction | undefined;
}

export function leafIdOf(core: EngineCore): string | null {
  return core.session.tree.leafId;
}

export function abortRun(core: EngineCore): void {
  const run = core.active;
  if (!run || run.controller.signal.aborted) return;
  run.controller.abort();
  run.abort.fire();
}

export function settingsOf(core: EngineCore): SessionSettings {
  const config = core.session.tree.config ?? DEFAULT_SESSION_CONFIG;
  const ctx = contextAtLeaf(core.session.tree);
  if (!ctx) {
    return {
      config,
      messages: NO_CONTEXT,
      model: config.model,
      thinkingLevel: config.thinkingLevel,
      activeTools: config.activeTools,
    };
  }
  return {
    config,
    messages: ctx.messages,
    model: ctx.model ?? config.model,
    thinkingLevel: ctx.thinkingLevel,
    activeTools: ctx.activeToolNames,
  };
}

export function configNow(core: EngineCore): SessionConfig {
  return core.session.tree.config ?? DEFAULT_SESSION_CONFIG;
}

export function activeToolsOf(core: EngineCore, names: readonly string[] | null): readonly ToolDefinition[] {
  if (names === null) return core.tools;
  return core.tools.filter((t) => names.includes(t.name));
}

export function engineModelOf(core: EngineCore, model: ModelRef): EngineModel {
  const { provider, modelId } = model;
  return core.modelApi ? { provider, modelId, api: core.modelApi(model) } : { provider, modelId };
}

/** How a run ended (a refusal, `agent_end`, or a failed emit). */
export type RunResult =
  | Rejection
  /** The run ended with `agent_end`; `messages` is what it carried. */
  | { status: "completed"; runId: string; messages: AgentMessage[] }
  /** `emit` threw: nothing more was emitted after the failed event; rebuild the shell from the log. */
  | { status: "emit_failed"; runId: string; error: Error };
