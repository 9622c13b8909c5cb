// The per-session run driver: pi's Agent (runs, queues, abort, continue) with the 0.75 harness
// overlay (nextTurn before the prompt, pending session writes flushed at turn_end, settings
// refreshed between turns). It keeps no session state of its own: settings, context, queues and
// pending writes are read from the session's one fold, which the shell updates from the log.
import {
  type AgentMessage,
  type ContextMessage,
  enqueueMessage,
  type ImageContent,
  type MessageQueues,
  type ModelRef,
  type QueueKind,
  type SessionConfig,
  type SessionState,
  type SessionWrite,
  streamingMessageOf,
  type ThinkingLevel,
} from "@fleet/protocol";
import { queueUpdate, queueUpdateDraft } from "../session-core/drafts.js";
import { continueRefusal, ENGINE_ERROR_TEXT, type Rejection, rejected } from "../session-core/run-refusals.js";
import { decideSessionWrite } from "../session-core/session-write.js";
import { AutoCompaction } from "./auto-compaction.js";
import {
  abortRun,
  type EngineCore,
  leafIdOf,
  nothingPolled,
  type RunResult,
  type SessionSettings,
  settingsOf,
} from "./engine-core.js";
import { emitDrafts, flushWrites, poll } from "./engine-queues.js";
import { type RunBody, runSinkOf, startRun } from "./engine-run.js";
import { createSinkState, type SinkState, sinkEmit, sinkExclusive } from "./event-sink.js";
import { createUserMessage } from "./messages.js";
import type { ResumePoint } from "./resume-point.js";
import { RESOLVED, type Sink } from "./run-scope.js";
import type { EngineHooks, EnginePorts, LoopEventBody, SummarizeCompaction, ToolDefinition } from "./types.js";

/** pi's refusals live in the shared core; re-exported for the engine's public surface. */
export { continueRefusal, ENGINE_ERROR_TEXT, type Rejection } from "../session-core/run-refusals.js";

export type { RunResult };

export interface SessionEngineOptions {
  ports: EnginePorts;
  /**
   * The session's one fold (`@fleet/protocol` `evolveSession`), owned by the shell. Contract: every
   * event `emit` accepted is folded into it before `emit` resolves (a `message_update` may be folded
   * later). The engine reads it and never modifies it.
   */
  session: SessionState;
  /** Every registered tool; the session's active tools select the ones the LLM sees (null = all). */
  tools: readonly ToolDefinition[];
  hooks?: EngineHooks;
  /** pi's `model.api` for assistant messages the engine synthesises. Default: the provider. */
  modelApi?: (model: ModelRef) => string;
  maxTokens?: number;
  sessionId?: string;
  /**
   * The model's context window (pi's `model.contextWindow`) and the summary port. Given, runs
   * compact automatically as pi's coding agent does (the session's `compaction` settings; see
   * `AutoCompaction`).
   */
  autoCompaction?: { contextWindow: (model: ModelRef) => number; summarize: SummarizeCompaction };
}

/** A read-only view of the session as the engine sees it (pi's `AgentState` plus the session fields). */
export interface SessionEngineState {
  /** The context at the leaf (pi's `state.messages` after a compaction or navigation); a copy. */
  readonly messages: readonly ContextMessage[];
  readonly leafId: string | null;
  readonly model: ModelRef;
  readonly thinkingLevel: ThinkingLevel;
  readonly systemPrompt: string;
  readonly activeTools: readonly string[] | null;
  readonly steeringMode: SessionConfig["steeringMode"];
  readonly followUpMode: SessionConfig["followUpMode"];
  readonly toolExecution: SessionConfig["toolExecution"];
  /** As last reported by `queue_update` (messages polled but not yet injected still count). */
  readonly queues: MessageQueues;
  /** A run is in progress in this engine. */
  readonly isStreaming: boolean;
  readonly streamingMessage: AgentMessage | undefined;
  readonly pendingToolCalls: ReadonlySet<string>;
  readonly errorMessage: string | undefined;
  readonly runId: string | undefined;
  /** `pending_write`s not flushed yet. */
  readonly pendingWrites: number;
}

export type PromptInput = string | AgentMessage | readonly AgentMessage[];

export class SessionEngine {
  declare private readonly core: EngineCore;
  declare private readonly runSink: Sink;

  constructor(options: SessionEngineOptions) {
    const core: EngineCore = {
      ports: options.ports,
      session: options.session,
      sink: undefined as unknown as SinkState,
      hooks: options.hooks ?? {},
      modelApi: options.modelApi,
      maxTokens: options.maxTokens,
      sessionId: options.sessionId,
      tools: options.tools,
      active: undefined,
      polled: nothingPolled(),
      runDirty: false,
      flushedMessages: [],
      autoCompaction: options.autoCompaction
        ? new AutoCompaction({ session: options.session, ...options.autoCompaction })
        : undefined,
    };
    core.sink = createSinkState({
      emit: options.ports.emit,
      newId: options.ports.newId,
      leafId: leafIdOf.bind(undefined, core),
      onFailure: abortRun.bind(undefined, core),
    });
    this.core = core;
    this.runSink = runSinkOf(core);
  }

  get state(): SessionEngineState {
    const core = this.core;
    const session = core.session;
    let settings: SessionSettings | undefined;
    const read = () => {
      settings ??= settingsOf(core);
      return settings;
    };
    return {
      get messages() {
        return read().messages.slice();
      },
      leafId: session.tree.leafId,
      get model() {
        return read().model;
      },
      get thinkingLevel() {
        return read().thinkingLevel;
      },
      get activeTools() {
        return read().activeTools;
      },
      get systemPrompt() {
        return read().config.systemPrompt;
      },
      get steeringMode() {
        return read().config.steeringMode;
      },
      get followUpMode() {
        return read().config.followUpMode;
      },
      get toolExecution() {
        return read().config.toolExecution;
      },
      queues: session.status.queues,
      isStreaming: core.active !== undefined,
      get streamingMessage() {
        return streamingMessageOf(session);
      },
      pendingToolCalls: session.status.pendingToolCalls,
      errorMessage: session.status.errorMessage,
      runId: core.active?.runId,
      pendingWrites: session.pendingWrites.length,
    };
  }

  // ---- runs -------------------------------------------------------------------------------------

  /** `busy` while a run is active, else nothing. */
  checkPrompt(): Rejection | undefined {
    return this.core.active ? rejected("busy", ENGINE_ERROR_TEXT.promptBusy) : undefined;
  }

  /** pi's `continue()` decision table, without side effects. */
  checkContinue(): Rejection | undefined {
    const core = this.core;
    if (core.active) return rejected("busy", ENGINE_ERROR_TEXT.continueBusy);
    return continueRefusal(settingsOf(core).messages, core.session.status.queues);
  }

  /**
   * Starts a run with the prompt's messages, preceded by every queued `nextTurn` message (harness
   * order). Resolves when the run settled (after `agent_end` and any writes flushed after it).
   */
  prompt(input: PromptInput, options: { images?: readonly ImageContent[]; runId?: string } = {}): Promise<RunResult> {
    const busy = this.checkPrompt();
    if (busy) return Promise.resolve(busy);
    const core = this.core;
    const own =
      typeof input === "string"
        ? [createUserMessage(input, options.images, core.ports.now())]
        : Array.isArray(input)
          ? (input as readonly AgentMessage[]).slice()
          : [input as AgentMessage];
    const nextTurn = poll(core, "nextTurn", "all");
    const messages = nextTurn.length > 0 ? [...nextTurn, ...own] : own;
    return startRun(core, this.runSink, options.runId, { kind: "prompt", messages, skipInitialSteeringPoll: false });
  }

  /**
   * pi's `continue()`: last message user/toolResult/custom → continuation run; assistant tail →
   * queued steering (by mode, initial steering poll skipped), else queued follow-ups, run as a prompt.
   */
  continue(options: { runId?: string } = {}): Promise<RunResult> {
    const refused = this.checkContinue();
    if (refused) return Promise.resolve(refused);
    const core = this.core;
    const settings = settingsOf(core);
    if (settings.messages.at(-1)?.role === "assistant") {
      const steering = poll(core, "steer", settings.config.steeringMode);
      if (steering.length > 0) {
        const body: RunBody = { kind: "prompt", messages: steering, skipInitialSteeringPoll: true };
        return startRun(core, this.runSink, options.runId, body);
      }
      const followUps = poll(core, "followUp", settings.config.followUpMode);
      const body: RunBody = { kind: "prompt", messages: followUps, skipInitialSteeringPoll: false };
      return startRun(core, this.runSink, options.runId, body);
    }
    return startRun(core, this.runSink, options.runId, { kind: "continuation" });
  }

  /**
   * Carries on an interrupted run from the log's position (`resumePointFromCursor`). A run whose
   * abort was accepted before the interruption carries on aborted.
   */
  resume(point: ResumePoint): Promise<RunResult> {
    if (this.core.active) return Promise.resolve(rejected("busy", ENGINE_ERROR_TEXT.busy));
    const body: RunBody = { kind: "resumed", point };
    return startRun(this.core, this.runSink, point.runId, body, point.runMessages ?? [], point.aborted === true);
  }

  /**
   * Aborts the active run (no-op when idle, or when `runId` is given and another run, or none, is
   * active). Queues are left as they are (pi 0.73 Agent).
   */
  abort(runId?: string): void {
    if (runId !== undefined && this.core.active?.runId !== runId) return;
    abortRun(this.core);
  }

  /** Resolves when no run is active. */
  waitForIdle(): Promise<void> {
    const run = this.core.active;
    if (!run) return RESOLVED;
    return new Promise((resolve) => {
      run.idle ??= [];
      run.idle.push(resolve);
    });
  }

  // ---- queues -----------------------------------------------------------------------------------

  /** Queues a steering message (allowed when idle: it waits for the next run). Emits `queue_update`. */
  steer(message: AgentMessage): Promise<void> {
    return this.enqueue("steer", message);
  }

  followUp(message: AgentMessage): Promise<void> {
    return this.enqueue("followUp", message);
  }

  /** Queued for the next `prompt()`, where it goes before the prompt's own message. */
  nextTurn(message: AgentMessage): Promise<void> {
    return this.enqueue("nextTurn", message);
  }

  /** Empties the given queues (default all three); emits `queue_update` when anything changed. */
  async clearQueues(kinds: readonly QueueKind[] = ["steer", "followUp", "nextTurn"]): Promise<MessageQueues> {
    const core = this.core;
    const queues = core.session.status.queues;
    const cleared: MessageQueues = { steer: [], followUp: [], nextTurn: [] };
    const next: MessageQueues = { ...queues };
    let changed = false;
    for (const kind of kinds) {
      cleared[kind] = queues[kind].slice(core.polled[kind]);
      changed ||= cleared[kind].length > 0;
      next[kind] = queues[kind].slice(0, core.polled[kind]);
    }
    if (changed) await emitDrafts(core, [queueUpdateDraft(core.ports.newId(), next)]);
    return cleared;
  }

  // ---- session writes ---------------------------------------------------------------------------

  setModel(model: ModelRef): Promise<"emitted" | "buffered"> {
    return this.write({ type: "model_change", provider: model.provider, modelId: model.modelId });
  }

  setThinkingLevel(thinkingLevel: ThinkingLevel): Promise<"emitted" | "buffered"> {
    return this.write({ type: "thinking_level_change", thinkingLevel });
  }

  setActiveTools(toolNames: readonly string[]): Promise<"emitted" | "buffered"> {
    return this.write({ type: "active_tools_change", toolNames: toolNames.slice() });
  }

  setLabel(targetId: string, label: string | null): Promise<"emitted" | "buffered"> {
    return this.write({ type: "label", targetId, label });
  }

  setName(name: string): Promise<"emitted" | "buffered"> {
    return this.write({ type: "session_info", name });
  }

  appendCustom(customType: string, data: unknown): Promise<"emitted" | "buffered"> {
    return this.write({ type: "custom", customType, data });
  }

  /** Appends a message to the transcript (a `custom` message, usually) with `message_start`/`_end`. */
  appendMessage(message: AgentMessage): Promise<"emitted" | "buffered"> {
    return this.write({ type: "message", message });
  }

  /**
   * Settings that are not tree entries (`config_change`). Queue modes apply at the next poll,
   * `toolExecution` at the next run, `systemPrompt` at the next turn.
   */
  async configure(
    patch: Partial<Pick<SessionConfig, "systemPrompt" | "steeringMode" | "followUpMode" | "toolExecution">>,
  ): Promise<void> {
    const present = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
    if (Object.keys(present).length === 0) return;
    await emitDrafts(this.core, [{ id: this.core.ports.newId(), body: { type: "config_change", ...present } }]);
    this.noteConfigured(patch);
  }

  /** The shell appended a `config_change` itself: a new system prompt applies from the next turn. */
  noteConfigured(patch: { systemPrompt?: string | undefined }): void {
    if (patch.systemPrompt !== undefined && this.core.active) this.core.runDirty = true;
  }

  /** Replaces the tool registry (active tools are resolved by name at every turn). */
  setTools(tools: readonly ToolDefinition[]): void {
    this.core.tools = tools;
    if (this.core.active) this.core.runDirty = true;
  }

  /**
   * Runs `fn` between two of the engine's deliveries (see `EventSink.exclusive`): the shell decides
   * and appends a command's events this way, on a fold that holds every event emitted before.
   */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return sinkExclusive(this.core.sink, fn);
  }

  /**
   * Carries out the log's pending writes in acceptance order (writes deferred meanwhile are flushed
   * too). Each is settled by its entry event, whose id the `pending_write` named.
   */
  flushWrites(): Promise<void> {
    return flushWrites(this.core);
  }

  // ---- internals --------------------------------------------------------------------------------

  private enqueue(kind: QueueKind, message: AgentMessage): Promise<void> {
    const session = this.core.session;
    return sinkEmit(
      this.core.sink,
      () => queueUpdate(enqueueMessage(session.status.queues, kind, message)) as LoopEventBody,
    );
  }

  private async write(write: SessionWrite): Promise<"emitted" | "buffered"> {
    const core = this.core;
    const session = core.session;
    const deferred = core.active !== undefined || session.status.isStreaming || session.compaction !== null;
    const drafts = decideSessionWrite(session, write, `engine:${write.type}`, core.ports.newId, deferred);
    await emitDrafts(core, drafts);
    return deferred ? "buffered" : "emitted";
  }
}

export function createSessionEngine(options: SessionEngineOptions): SessionEngine {
  return new SessionEngine(options);
}
