// The per-session run driver: pi's Agent (runs, queues, abort, continue) with the 0.75 harness
// overlay (nextTurn before the prompt, pending session writes flushed at turn_end, settings
// refreshed between turns). It keeps no session state of its own: settings, context, queues and
// pending writes are read from the session's one fold, which the shell updates from the log.
import {
  type AgentMessage,
  buildContext,
  DEFAULT_SESSION_CONFIG,
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
import { type DraftEvent, queueUpdate, queueUpdateDraft, writeDrafts } from "../decide/drafts.js";
import { affectsNextTurn, decideSessionWrite } from "../decide/session-write.js";
import { AutoCompaction } from "./auto-compaction.js";
import { EventSink } from "./event-sink.js";
import { createUserMessage } from "./messages.js";
import type { ResumePoint } from "./resume-point.js";
import { runContinuation, runPrompt, runResumed } from "./run-agent-loop.js";
import { AbortWatch, type LoopState, RESOLVED, type RunScope, type Sink } from "./run-scope.js";
import type {
  EngineHooks,
  EngineModel,
  EnginePorts,
  LoopConfig,
  LoopEventBody,
  NextTurnUpdate,
  ToolDefinition,
  TurnContext,
} from "./types.js";

/** pi's error texts for the public API (exact; conformance tests match them). */
export const ENGINE_ERROR_TEXT = {
  promptBusy:
    "Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion.",
  continueBusy: "Agent is already processing. Wait for completion before continuing.",
  noMessages: "No messages to continue from",
  assistantTail: "Cannot continue from message role: assistant",
  busy: "Agent is already processing.",
} as const;

/** A refused request, as data (the service turns it into `command_rejected`). */
export interface Rejection {
  status: "rejected";
  code: "busy" | "conflict";
  reason: string;
}

export type RunResult =
  | Rejection
  /** The run ended with `agent_end`; `messages` is what it carried. */
  | { status: "completed"; runId: string; messages: AgentMessage[] }
  /** `emit` threw: nothing more was emitted after the failed event; rebuild the shell from the log. */
  | { status: "emit_failed"; runId: string; error: Error };

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
   * The model's context window (pi's `model.contextWindow`). Given, runs compact automatically as
   * pi's coding agent does (the session's `compaction` settings; see `AutoCompaction`).
   */
  contextWindow?: (model: ModelRef) => number;
}

/** A read-only view of the session as the engine sees it (pi's `AgentState` plus the session fields). */
export interface SessionEngineState {
  /** The context at the leaf (pi's `state.messages` after a compaction or navigation). */
  readonly messages: readonly import("@fleet/protocol").ContextMessage[];
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

interface ActiveRun {
  runId: string;
  controller: AbortController;
  abort: AbortWatch;
  /** Resolved when the run settled (created on demand by `waitForIdle`). */
  idle: (() => void)[] | undefined;
}

/** Settings and context of the session at its leaf, from the fold. */
interface SessionSettings {
  config: SessionConfig;
  messages: import("@fleet/protocol").ContextMessage[];
  model: ModelRef;
  thinkingLevel: ThinkingLevel;
  activeTools: readonly string[] | null;
}

const NONE: AgentMessage[] = [];
const NOTHING_POLLED: Readonly<Record<QueueKind, number>> = Object.freeze({ steer: 0, followUp: 0, nextTurn: 0 });

const rejected = (code: Rejection["code"], reason: string): Rejection => ({ status: "rejected", code, reason });

export class SessionEngine {
  private readonly ports: EnginePorts;
  private readonly session: SessionState;
  private readonly sink: EventSink;
  private readonly hooks: EngineHooks;
  private readonly modelApi: ((model: ModelRef) => string) | undefined;
  private readonly maxTokens: number | undefined;
  private readonly sessionId: string | undefined;
  private tools: readonly ToolDefinition[];
  private active: ActiveRun | undefined;
  /**
   * Messages at the head of each queue that the run polled and has not injected yet (their drain's
   * `queue_update` is not out). Run-local: after a crash they are simply still queued in the log.
   */
  private polled: Record<QueueKind, number> = { ...NOTHING_POLLED };
  /** Writes flushed during the run since the last `prepareNextTurn`. */
  private runDirty = false;
  private flushedMessages: AgentMessage[] = [];
  private readonly runSink: Sink;
  private readonly autoCompaction: AutoCompaction | undefined;

  constructor(options: SessionEngineOptions) {
    this.ports = options.ports;
    this.session = options.session;
    this.hooks = options.hooks ?? {};
    this.modelApi = options.modelApi;
    this.maxTokens = options.maxTokens;
    this.sessionId = options.sessionId;
    this.tools = options.tools;
    this.sink = new EventSink({
      emit: options.ports.emit,
      newId: options.ports.newId,
      leafId: () => this.session.tree.leafId,
      onFailure: () => this.abort(),
    });
    this.runSink = new RunSink(this.sink, this);
    this.autoCompaction = options.contextWindow
      ? new AutoCompaction({ session: options.session, contextWindow: options.contextWindow })
      : undefined;
  }

  get state(): SessionEngineState {
    const session = this.session;
    let settings: SessionSettings | undefined;
    const read = () => {
      settings ??= this.settings();
      return settings;
    };
    return {
      get messages() {
        return read().messages;
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
      isStreaming: this.active !== undefined,
      get streamingMessage() {
        return streamingMessageOf(session);
      },
      pendingToolCalls: session.status.pendingToolCalls,
      errorMessage: session.status.errorMessage,
      runId: this.active?.runId,
      pendingWrites: session.pendingWrites.length,
    };
  }

  // ---- runs -------------------------------------------------------------------------------------

  /** `busy` while a run is active, else nothing. */
  checkPrompt(): Rejection | undefined {
    return this.active ? rejected("busy", ENGINE_ERROR_TEXT.promptBusy) : undefined;
  }

  /** pi's `continue()` decision table, without side effects. */
  checkContinue(): Rejection | undefined {
    if (this.active) return rejected("busy", ENGINE_ERROR_TEXT.continueBusy);
    return continueRefusal(this.settings().messages, this.session.status.queues);
  }

  /**
   * Starts a run with the prompt's messages, preceded by every queued `nextTurn` message (harness
   * order). Resolves when the run settled (after `agent_end` and any writes flushed after it).
   */
  prompt(input: PromptInput, options: { images?: readonly ImageContent[]; runId?: string } = {}): Promise<RunResult> {
    const busy = this.checkPrompt();
    if (busy) return Promise.resolve(busy);
    const own =
      typeof input === "string"
        ? [createUserMessage(input, options.images, this.ports.now())]
        : Array.isArray(input)
          ? (input as readonly AgentMessage[]).slice()
          : [input as AgentMessage];
    const nextTurn = this.poll("nextTurn", "all");
    return this.startRun(options.runId, (loop, run) => runPrompt([...nextTurn, ...own], loop, run));
  }

  /**
   * pi's `continue()`: last message user/toolResult/custom → continuation run; assistant tail →
   * queued steering (by mode, initial steering poll skipped), else queued follow-ups, run as a prompt.
   */
  continue(options: { runId?: string } = {}): Promise<RunResult> {
    const refused = this.checkContinue();
    if (refused) return Promise.resolve(refused);
    const settings = this.settings();
    if (settings.messages.at(-1)?.role === "assistant") {
      const steering = this.poll("steer", settings.config.steeringMode);
      if (steering.length > 0) {
        return this.startRun(options.runId, (loop, run) =>
          runPrompt(steering, loop, run, { skipInitialSteeringPoll: true }),
        );
      }
      const followUps = this.poll("followUp", settings.config.followUpMode);
      return this.startRun(options.runId, (loop, run) => runPrompt(followUps, loop, run));
    }
    return this.startRun(options.runId, (loop, run) => runContinuation(loop, run));
  }

  /**
   * Carries on an interrupted run from the log's position (`resumePointFromCursor`). A run whose
   * abort was accepted before the interruption carries on aborted.
   */
  resume(point: ResumePoint): Promise<RunResult> {
    if (this.active) return Promise.resolve(rejected("busy", ENGINE_ERROR_TEXT.busy));
    return this.startRun(
      point.runId,
      (loop, run) => runResumed(point, loop, run),
      point.runMessages ?? [],
      point.aborted === true,
    );
  }

  /** Aborts the active run (no-op when idle). Queues are left as they are (pi 0.73 Agent). */
  abort(): void {
    const run = this.active;
    if (!run || run.controller.signal.aborted) return;
    run.controller.abort();
    run.abort.fire();
  }

  /** Resolves when no run is active. */
  waitForIdle(): Promise<void> {
    const run = this.active;
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
    const queues = this.session.status.queues;
    const cleared: MessageQueues = { steer: [], followUp: [], nextTurn: [] };
    const next: MessageQueues = { ...queues };
    let changed = false;
    for (const kind of kinds) {
      cleared[kind] = queues[kind].slice(this.polled[kind]);
      changed ||= cleared[kind].length > 0;
      next[kind] = queues[kind].slice(0, this.polled[kind]);
    }
    if (changed) await this.emitDrafts([queueUpdateDraft(this.ports.newId(), next)]);
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
    await this.emitDrafts([{ id: this.ports.newId(), body: { type: "config_change", ...present } }]);
    this.noteConfigured(patch);
  }

  /** The shell appended a `config_change` itself: a new system prompt applies from the next turn. */
  noteConfigured(patch: { systemPrompt?: string | undefined }): void {
    if (patch.systemPrompt !== undefined && this.active) this.runDirty = true;
  }

  /** Replaces the tool registry (active tools are resolved by name at every turn). */
  setTools(tools: readonly ToolDefinition[]): void {
    this.tools = tools;
    if (this.active) this.runDirty = true;
  }

  // ---- internals --------------------------------------------------------------------------------

  private settings(): SessionSettings {
    const config = this.session.tree.config ?? DEFAULT_SESSION_CONFIG;
    const ctx = buildContext(this.session.tree);
    if (!ctx.ok) {
      return {
        config,
        messages: [],
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

  private async startRun(
    runId: string | undefined,
    body: (loop: LoopState, run: RunScope) => Promise<AgentMessage[]>,
    runMessages: readonly AgentMessage[] = NONE,
    aborted = false,
  ): Promise<RunResult> {
    const id = runId ?? this.ports.newId();
    const controller = new AbortController();
    if (aborted) controller.abort();
    const abort = new AbortWatch(controller.signal, { attach: false });
    const active: ActiveRun = { runId: id, controller, abort, idle: undefined };
    this.active = active;
    this.sink.runId = id;
    this.runDirty = false;
    this.flushedMessages.length = 0;

    const settings = this.settings();
    const model = this.engineModel(settings.model);
    const loop: LoopState = {
      context: {
        systemPrompt: settings.config.systemPrompt,
        messages: settings.messages.slice(),
        tools: this.activeTools(settings.activeTools),
      },
      config: new ShellLoopConfig(
        this,
        this.hooks,
        model,
        settings,
        this.maxTokens,
        this.sessionId,
        this.autoCompaction,
      ),
      model,
      thinkingLevel: settings.thinkingLevel,
      newMessages: runMessages.slice(),
    };
    const run: RunScope = { ports: this.ports, sink: this.runSink, signal: controller.signal, abort };
    let result: RunResult;
    try {
      result = { status: "completed", runId: id, messages: await body(loop, run) };
    } catch (error) {
      result = { status: "emit_failed", runId: id, error: this.sink.failure ?? (error as Error) };
    }
    this.active = undefined;
    this.sink.runId = undefined;
    this.polled = { ...NOTHING_POLLED };
    if (active.idle) for (const resolve of active.idle) resolve();
    if (this.session.pendingWrites.length > 0 && !this.sink.failure && !this.session.status.isStreaming) {
      try {
        await this.flushWrites();
      } catch {
        // emit failed while flushing after the run: the shell is dead; the result still stands.
      }
    }
    return result;
  }

  /** @internal Harness `prepareNextTurn`: settings and messages flushed since the last turn apply from now on; then the user hook. */
  prepareNextTurn(turn: TurnContext): NextTurnUpdate | undefined | Promise<NextTurnUpdate | undefined> {
    let update: NextTurnUpdate | undefined;
    if (this.runDirty) {
      this.runDirty = false;
      const settings = this.settings();
      update = {
        context: {
          systemPrompt: settings.config.systemPrompt,
          messages: [...turn.context.messages, ...this.flushedMessages],
          tools: this.activeTools(settings.activeTools),
        },
        model: this.engineModel(settings.model),
        thinkingLevel: settings.thinkingLevel,
      };
      this.flushedMessages.length = 0;
    }
    const hook = this.hooks.prepareNextTurn;
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

  /** @internal */
  pollSteering(): AgentMessage[] {
    return this.poll("steer", this.configNow().steeringMode);
  }

  /** @internal */
  pollFollowUp(): AgentMessage[] {
    return this.poll("followUp", this.configNow().followUpMode);
  }

  private configNow(): SessionConfig {
    return this.session.tree.config ?? DEFAULT_SESSION_CONFIG;
  }

  private activeTools(names: readonly string[] | null): readonly ToolDefinition[] {
    if (names === null) return this.tools;
    return this.tools.filter((t) => names.includes(t.name));
  }

  private engineModel(model: ModelRef): EngineModel {
    return this.modelApi ? { ...model, api: this.modelApi(model) } : { ...model };
  }

  private enqueue(kind: QueueKind, message: AgentMessage): Promise<void> {
    return this.sink.emit(
      () => queueUpdate(enqueueMessage(this.session.status.queues, kind, message)) as LoopEventBody,
    );
  }

  /**
   * Takes messages from the head of a queue, past the ones already polled; they stay reported as
   * queued (in the log's queues) until `announceDrain`.
   */
  private poll(kind: QueueKind, mode: SessionConfig["steeringMode"]): AgentMessage[] {
    const available = this.session.status.queues[kind].slice(this.polled[kind]);
    if (available.length === 0) return NONE;
    const drained = mode === "all" ? available : available.slice(0, 1);
    this.polled[kind] += drained.length;
    return drained;
  }

  /**
   * @internal The drain's `queue_update`, just before the injected messages' first `message_start`:
   * the queues as they are at delivery, without the drained heads (messages queued meanwhile stay),
   * which it names in `delivering` for a worker that takes the run over before they are delivered.
   */
  announceDrain(): Promise<void> | undefined {
    const polled = this.polled;
    if (polled.steer + polled.followUp + polled.nextTurn === 0) return undefined;
    this.polled = { ...NOTHING_POLLED };
    return this.sink.emit(() => {
      const queues = this.session.status.queues;
      const delivering = [
        ...queues.nextTurn.slice(0, polled.nextTurn),
        ...queues.steer.slice(0, polled.steer),
        ...queues.followUp.slice(0, polled.followUp),
      ];
      return {
        ...queueUpdate({
          steer: queues.steer.slice(polled.steer),
          followUp: queues.followUp.slice(polled.followUp),
          nextTurn: queues.nextTurn.slice(polled.nextTurn),
        }),
        delivering,
      } as LoopEventBody;
    });
  }

  /**
   * Runs `fn` between two of the engine's deliveries (see `EventSink.exclusive`): the shell decides
   * and appends a command's events this way, on a fold that holds every event emitted before.
   */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return this.sink.exclusive(fn);
  }

  private async write(write: SessionWrite): Promise<"emitted" | "buffered"> {
    const deferred = this.active !== undefined || this.session.status.isStreaming || this.session.compaction !== null;
    const drafts = decideSessionWrite(this.session, write, `engine:${write.type}`, this.ports.newId, deferred);
    await this.emitDrafts(drafts);
    return deferred ? "buffered" : "emitted";
  }

  private async emitDrafts(drafts: readonly DraftEvent[]): Promise<void> {
    for (const draft of drafts) await this.sink.emit(draft.body as LoopEventBody, draft.id);
  }

  /** @internal */
  hasPendingWrites(): boolean {
    return this.session.pendingWrites.length > 0;
  }

  /**
   * @internal Carries out the log's pending writes in acceptance order (writes deferred meanwhile
   * are flushed too). Each is settled by its entry event, whose id the `pending_write` named.
   */
  async flushWrites(): Promise<void> {
    while (this.session.pendingWrites.length > 0) {
      const pending = this.session.pendingWrites[0];
      if (!pending) break;
      const write = pending.write;
      const started =
        write.type === "message" && sameMessage(streamingMessageOf(this.session), write.message)
          ? undefined
          : this.ports.newId();
      if (this.active && affectsNextTurn(write)) {
        this.runDirty = true;
        if (write.type === "message") this.flushedMessages.push(write.message);
      }
      await this.emitDrafts(
        writeDrafts(write, { eventId: pending.eventId, startId: write.type === "message" ? started : undefined }),
      );
      if (this.session.pendingWrites[0] === pending) break; // the shell did not fold the settling event
    }
  }
}

/** pi's `continue()` refusals, from the context and the queues. */
export function continueRefusal(
  messages: readonly import("@fleet/protocol").ContextMessage[],
  queues: MessageQueues,
): Rejection | undefined {
  const last = messages.at(-1);
  if (!last) return rejected("conflict", ENGINE_ERROR_TEXT.noMessages);
  if (last.role === "assistant" && queues.steer.length === 0 && queues.followUp.length === 0) {
    return rejected("conflict", ENGINE_ERROR_TEXT.assistantTail);
  }
  return undefined;
}

/** True when a logged `message_start` (read back from the log) is the message of a write. */
function sameMessage(a: AgentMessage | undefined, b: AgentMessage): boolean {
  return a !== undefined && a.role === b.role && a.timestamp === b.timestamp && JSON.stringify(a) === JSON.stringify(b);
}

/** A run's loop config: the session's settings and hooks, with the queue and turn callbacks of the shell. */
class ShellLoopConfig implements LoopConfig {
  model: EngineModel;
  thinkingLevel: ThinkingLevel;
  toolExecution: SessionConfig["toolExecution"];
  maxTokens: number | undefined;
  sessionId: string | undefined;
  transformContext: EngineHooks["transformContext"];
  convertToLlm: EngineHooks["convertToLlm"];
  beforeToolCall: EngineHooks["beforeToolCall"];
  afterToolCall: EngineHooks["afterToolCall"];
  shouldStopAfterTurn: EngineHooks["shouldStopAfterTurn"];
  autoCompaction: AutoCompaction | undefined;
  private readonly engine: SessionEngine;

  constructor(
    engine: SessionEngine,
    hooks: EngineHooks,
    model: EngineModel,
    settings: SessionSettings,
    maxTokens: number | undefined,
    sessionId: string | undefined,
    autoCompaction: AutoCompaction | undefined,
  ) {
    this.engine = engine;
    this.autoCompaction = autoCompaction;
    this.model = model;
    this.thinkingLevel = settings.thinkingLevel;
    this.toolExecution = settings.config.toolExecution;
    this.maxTokens = maxTokens;
    this.sessionId = sessionId;
    this.transformContext = hooks.transformContext;
    this.convertToLlm = hooks.convertToLlm;
    this.beforeToolCall = hooks.beforeToolCall;
    this.afterToolCall = hooks.afterToolCall;
    this.shouldStopAfterTurn = hooks.shouldStopAfterTurn;
  }

  prepareNextTurn(turn: TurnContext) {
    return this.engine.prepareNextTurn(turn);
  }

  getSteeringMessages(): AgentMessage[] {
    return this.engine.pollSteering();
  }

  getFollowUpMessages(): AgentMessage[] {
    return this.engine.pollFollowUp();
  }

  beforeInject(): Promise<void> | undefined {
    return this.engine.announceDrain();
  }
}

/** The run's view of the sink: pending writes flush after `turn_end` and before `agent_end`. */
class RunSink implements Sink {
  private readonly sink: EventSink;
  private readonly engine: { flushWrites(): Promise<void>; hasPendingWrites(): boolean };

  constructor(sink: EventSink, engine: { flushWrites(): Promise<void>; hasPendingWrites(): boolean }) {
    this.sink = sink;
    this.engine = engine;
  }

  get failure(): Error | undefined {
    return this.sink.failure;
  }

  emit(body: LoopEventBody): Promise<void> {
    if ((body.type !== "turn_end" && body.type !== "agent_end") || !this.engine.hasPendingWrites()) {
      return this.sink.emit(body);
    }
    if (body.type === "agent_end") return this.engine.flushWrites().then(() => this.sink.emit(body));
    return this.sink.emit(body).then(() => this.engine.flushWrites());
  }
}

export function createSessionEngine(options: SessionEngineOptions): SessionEngine {
  return new SessionEngine(options);
}
