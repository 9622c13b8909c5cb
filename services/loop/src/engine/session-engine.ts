// The stateful per-session shell: pi's Agent (state, queues, abort, continue) with the 0.75
// harness overlay (nextTurn before the prompt, pending session writes, settings refreshed between
// turns). Built from a folded state so the service can rebuild it from the log at any time.
import {
  type AgentMessage,
  applyDeltas,
  type ContextMessage,
  drainMessageQueue,
  emptyMessageQueues,
  enqueueMessage,
  type ImageContent,
  type MessageQueues,
  type ModelRef,
  type QueueKind,
  type SessionConfig,
  type StreamDelta,
  type ThinkingLevel,
} from "@fleet/protocol";
import { EventSink, type EventSinkObserver } from "./event-sink.js";
import { createUserMessage } from "./messages.js";
import type { ResumePoint } from "./resume-point.js";
import { runContinuation, runPrompt, runResumed } from "./run-agent-loop.js";
import { AbortWatch, type LoopState, RESOLVED, type RunScope, type Sink } from "./run-scope.js";
import { affectsNextTurn, type SessionWrite, writeEvents } from "./session-writes.js";
import type {
  EngineEvent,
  EngineHooks,
  EngineModel,
  EnginePorts,
  LoopConfig,
  LoopContext,
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

/** The folded state the shell starts from. */
export interface SessionEngineInit {
  /** The current context (built from the session tree at `leafId`). */
  messages: readonly ContextMessage[];
  /** Parent of the next entry; `null` for an empty session. */
  leafId: string | null;
  config: SessionConfig;
  queues?: MessageQueues;
}

export interface SessionEngineOptions {
  ports: EnginePorts;
  /** Every registered tool; `config.activeTools` selects the ones the LLM sees (null = all). */
  tools: readonly ToolDefinition[];
  init: SessionEngineInit;
  hooks?: EngineHooks;
  /** pi's `model.api` for assistant messages the engine synthesises. Default: the provider. */
  modelApi?: (model: ModelRef) => string;
  maxTokens?: number;
  sessionId?: string;
}

/** A read-only view of the shell's state (pi's `AgentState` plus the session fields). */
export interface SessionEngineState {
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
  readonly isStreaming: boolean;
  readonly streamingMessage: AgentMessage | undefined;
  readonly pendingToolCalls: ReadonlySet<string>;
  readonly errorMessage: string | undefined;
  readonly runId: string | undefined;
  /** Session writes buffered until the next flush point. */
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

const NONE: AgentMessage[] = [];
/** Shared empty queues (never modified: queue objects are always replaced). */
const NO_QUEUES: MessageQueues = Object.freeze({ steer: NONE, followUp: NONE, nextTurn: NONE });

const rejected = (code: Rejection["code"], reason: string): Rejection => ({ status: "rejected", code, reason });

export class SessionEngine implements EventSinkObserver {
  private readonly ports: EnginePorts;
  private readonly sink: EventSink;
  private readonly hooks: EngineHooks;
  private readonly modelApi: ((model: ModelRef) => string) | undefined;
  private readonly maxTokens: number | undefined;
  private readonly sessionId: string | undefined;
  private tools: readonly ToolDefinition[];
  private config: SessionConfig;
  private messages: ContextMessage[];
  /** Messages not yet polled. */
  private queues: MessageQueues;
  /** Polled but not injected yet: still reported as queued until their injection's `queue_update`. */
  private inFlight: MessageQueues = NO_QUEUES;
  private active: ActiveRun | undefined;
  private pendingWrites: SessionWrite[] = [];
  /** Writes flushed during the run since the last `prepareNextTurn`. */
  private runDirty = false;
  private flushedMessages: AgentMessage[] = [];
  private streamingBase: AgentMessage | undefined;
  private streamingDeltas: StreamDelta[] = [];
  private pendingToolCalls: ReadonlySet<string> = new Set();
  private errorMessage: string | undefined;
  private readonly runSink: Sink;

  constructor(options: SessionEngineOptions) {
    this.ports = options.ports;
    this.hooks = options.hooks ?? {};
    this.modelApi = options.modelApi;
    this.maxTokens = options.maxTokens;
    this.sessionId = options.sessionId;
    this.tools = options.tools;
    this.config = { ...options.init.config };
    this.messages = options.init.messages.slice();
    this.queues = options.init.queues ?? NO_QUEUES;
    this.sink = new EventSink({
      emit: options.ports.emit,
      newId: options.ports.newId,
      leafId: options.init.leafId,
      observer: this,
    });
    this.runSink = new RunSink(this.sink, this);
  }

  /** @internal EventSinkObserver: a write to the log failed; stop the run. */
  onFailure(): void {
    this.abort();
  }

  get state(): SessionEngineState {
    const engine = this;
    return {
      messages: this.messages,
      leafId: this.sink.leafId,
      model: this.config.model,
      thinkingLevel: this.config.thinkingLevel,
      systemPrompt: this.config.systemPrompt,
      activeTools: this.config.activeTools,
      steeringMode: this.config.steeringMode,
      followUpMode: this.config.followUpMode,
      toolExecution: this.config.toolExecution,
      queues: this.reportedQueues(),
      isStreaming: this.active !== undefined,
      get streamingMessage() {
        return engine.currentStreamingMessage();
      },
      pendingToolCalls: this.pendingToolCalls,
      errorMessage: this.errorMessage,
      runId: this.active?.runId,
      pendingWrites: this.pendingWrites.length,
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
    const last = this.messages.at(-1);
    if (!last) return rejected("conflict", ENGINE_ERROR_TEXT.noMessages);
    if (last.role === "assistant" && this.queues.steer.length === 0 && this.queues.followUp.length === 0) {
      return rejected("conflict", ENGINE_ERROR_TEXT.assistantTail);
    }
    return undefined;
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
    if (this.messages.at(-1)?.role === "assistant") {
      const steering = this.poll("steer", this.config.steeringMode);
      if (steering.length > 0) {
        return this.startRun(options.runId, (loop, run) =>
          runPrompt(steering, loop, run, { skipInitialSteeringPoll: true }),
        );
      }
      const followUps = this.poll("followUp", this.config.followUpMode);
      return this.startRun(options.runId, (loop, run) => runPrompt(followUps, loop, run));
    }
    return this.startRun(options.runId, (loop, run) => runContinuation(loop, run));
  }

  /** Carries on an interrupted run (the shell must hold the log's state up to the interruption). */
  resume(point: ResumePoint): Promise<RunResult> {
    if (this.active) return Promise.resolve(rejected("busy", ENGINE_ERROR_TEXT.busy));
    return this.startRun(point.runId, (loop, run) => runResumed(point, loop, run), point.runMessages ?? []);
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
    const cleared = emptyMessageQueues();
    let changed = false;
    for (const kind of kinds) {
      cleared[kind] = this.queues[kind];
      changed ||= this.queues[kind].length > 0;
      this.queues = { ...this.queues, [kind]: [] };
    }
    if (changed) await this.emitQueueUpdate();
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

  // ---- configuration ----------------------------------------------------------------------------

  /**
   * Settings that are not tree entries. Queue modes apply at the next poll, `toolExecution` at the
   * next run, `systemPrompt` at the next turn.
   */
  configure(patch: Partial<Pick<SessionConfig, "systemPrompt" | "steeringMode" | "followUpMode" | "toolExecution">>) {
    for (const [key, value] of Object.entries(patch)) {
      if (value !== undefined) (this.config as Record<string, unknown>)[key] = value;
    }
    if (patch.systemPrompt !== undefined && this.active) this.runDirty = true;
  }

  /** Replaces the tool registry (active tools are resolved by name at every turn). */
  setTools(tools: readonly ToolDefinition[]): void {
    this.tools = tools;
    if (this.active) this.runDirty = true;
  }

  /** Replaces the transcript and leaf, e.g. after a navigation or compaction the service applied. Idle only. */
  replaceContext(messages: readonly ContextMessage[], leafId: string | null): Rejection | undefined {
    if (this.active) return rejected("busy", ENGINE_ERROR_TEXT.busy);
    this.messages = messages.slice();
    this.sink.moveLeaf(leafId);
    return undefined;
  }

  // ---- internals --------------------------------------------------------------------------------

  private async startRun(
    runId: string | undefined,
    body: (loop: LoopState, run: RunScope) => Promise<AgentMessage[]>,
    runMessages: readonly AgentMessage[] = NONE,
  ): Promise<RunResult> {
    const id = runId ?? this.ports.newId();
    const controller = new AbortController();
    const abort = new AbortWatch(controller.signal, { attach: false });
    const active: ActiveRun = { runId: id, controller, abort, idle: undefined };
    this.active = active;
    this.sink.runId = id;
    this.streamingBase = undefined;
    if (this.streamingDeltas.length > 0) this.streamingDeltas = [];
    this.errorMessage = undefined;
    this.runDirty = false;
    this.flushedMessages.length = 0;

    const model = this.engineModel();
    const loop: LoopState = {
      context: this.currentContext(),
      config: new ShellLoopConfig(this, this.hooks, model, this.config, this.maxTokens, this.sessionId),
      model,
      thinkingLevel: this.config.thinkingLevel,
      newMessages: runMessages.slice(),
    };
    const run: RunScope = { ports: this.ports, sink: this.runSink, signal: controller.signal, abort };
    let result: RunResult;
    try {
      result = { status: "completed", runId: id, messages: await body(loop, run) };
    } catch (error) {
      result = { status: "emit_failed", runId: id, error: this.sink.failure ?? (error as Error) };
    }
    this.finishRun();
    if (active.idle) for (const resolve of active.idle) resolve();
    if (this.pendingWrites.length > 0 && !this.sink.failure) {
      try {
        await this.flushWrites();
      } catch {
        // emit failed while flushing after the run: the shell is dead; the result still stands.
      }
    }
    return result;
  }

  private finishRun(): void {
    this.active = undefined;
    this.sink.runId = undefined;
    this.streamingBase = undefined;
    if (this.streamingDeltas.length > 0) this.streamingDeltas = [];
    this.pendingToolCalls = new Set();
    for (const kind of ["steer", "followUp", "nextTurn"] as const) {
      if (this.inFlight[kind].length > 0)
        this.queues = { ...this.queues, [kind]: [...this.inFlight[kind], ...this.queues[kind]] };
    }
    this.inFlight = NO_QUEUES;
  }

  /** @internal Harness `prepareNextTurn`: settings and messages flushed since the last turn apply from now on; then the user hook. */
  prepareNextTurn(turn: TurnContext): NextTurnUpdate | undefined | Promise<NextTurnUpdate | undefined> {
    let update: NextTurnUpdate | undefined;
    if (this.runDirty) {
      this.runDirty = false;
      update = {
        context: {
          systemPrompt: this.config.systemPrompt,
          messages: [...turn.context.messages, ...this.flushedMessages],
          tools: this.activeTools(),
        },
        model: this.engineModel(),
        thinkingLevel: this.config.thinkingLevel,
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
    return this.poll("steer", this.config.steeringMode);
  }

  /** @internal */
  pollFollowUp(): AgentMessage[] {
    return this.poll("followUp", this.config.followUpMode);
  }

  private currentContext(): LoopContext {
    return { systemPrompt: this.config.systemPrompt, messages: this.messages.slice(), tools: this.activeTools() };
  }

  private activeTools(): readonly ToolDefinition[] {
    const names = this.config.activeTools;
    if (names === null) return this.tools;
    return this.tools.filter((t) => names.includes(t.name));
  }

  private engineModel(): EngineModel {
    const model = this.config.model;
    return this.modelApi ? { ...model, api: this.modelApi(model) } : { ...model };
  }

  private async enqueue(kind: QueueKind, message: AgentMessage): Promise<void> {
    this.queues = enqueueMessage(this.queues, kind, message);
    await this.emitQueueUpdate();
  }

  /** Removes messages from a queue; they stay reported as queued until `announceDrain`. */
  private poll(kind: QueueKind, mode: SessionConfig["steeringMode"]): AgentMessage[] {
    if (this.queues[kind].length === 0) return NONE;
    const { queues, drained } = drainMessageQueue(this.queues, kind, mode);
    if (drained.length === 0) return drained;
    this.queues = queues;
    this.inFlight = { ...this.inFlight, [kind]: [...this.inFlight[kind], ...drained] };
    return drained;
  }

  /** The drain's `queue_update`, just before the injected messages' first `message_start`. */
  /** @internal */
  announceDrain(): Promise<void> | undefined {
    const moved = this.inFlight.steer.length + this.inFlight.followUp.length + this.inFlight.nextTurn.length;
    if (moved === 0) return undefined;
    this.inFlight = NO_QUEUES;
    return this.emitQueueUpdate();
  }

  private reportedQueues(): MessageQueues {
    const f = this.inFlight;
    const q = this.queues;
    if (f.steer.length + f.followUp.length + f.nextTurn.length === 0) return q;
    return {
      steer: [...f.steer, ...q.steer],
      followUp: [...f.followUp, ...q.followUp],
      nextTurn: [...f.nextTurn, ...q.nextTurn],
    };
  }

  private emitQueueUpdate(): Promise<void> {
    const q = this.reportedQueues();
    return this.sink.emit({
      type: "queue_update",
      steer: q.steer.slice(),
      followUp: q.followUp.slice(),
      nextTurn: q.nextTurn.slice(),
    });
  }

  private async write(write: SessionWrite): Promise<"emitted" | "buffered"> {
    if (this.active) {
      this.pendingWrites.push(write);
      return "buffered";
    }
    await this.emitWrite(write);
    return "emitted";
  }

  private async emitWrite(write: SessionWrite): Promise<void> {
    if (this.active && affectsNextTurn(write)) {
      this.runDirty = true;
      if (write.type === "message") this.flushedMessages.push(write.message);
    }
    for (const body of writeEvents(write)) await this.sink.emit(body);
  }

  /** @internal */
  hasPendingWrites(): boolean {
    return this.pendingWrites.length > 0;
  }

  /** @internal Emits buffered writes in FIFO order (writes buffered meanwhile are flushed too). */
  async flushWrites(): Promise<void> {
    while (this.pendingWrites.length > 0) {
      const write = this.pendingWrites.shift() as SessionWrite;
      await this.emitWrite(write);
    }
  }

  private currentStreamingMessage(): AgentMessage | undefined {
    const base = this.streamingBase;
    if (base?.role === "assistant" && this.streamingDeltas.length > 0) {
      this.streamingBase = applyDeltas(base, this.streamingDeltas);
      if (this.streamingDeltas.length > 0) this.streamingDeltas = [];
    }
    return this.streamingBase;
  }

  /** @internal EventSinkObserver: pi's `processEvents` reductions, applied when an event is queued. */
  onEvent(event: EngineEvent): void {
    const body = event.body;
    switch (body.type) {
      case "message_start":
        this.streamingBase = body.message;
        if (this.streamingDeltas.length > 0) this.streamingDeltas = [];
        break;
      case "message_update":
        for (const delta of body.deltas) this.streamingDeltas.push(delta);
        break;
      case "message_end":
        this.streamingBase = undefined;
        if (this.streamingDeltas.length > 0) this.streamingDeltas = [];
        this.messages.push(body.message);
        break;
      case "tool_execution_start": {
        const next = new Set(this.pendingToolCalls);
        next.add(body.toolCallId);
        this.pendingToolCalls = next;
        break;
      }
      case "tool_execution_end": {
        const next = new Set(this.pendingToolCalls);
        next.delete(body.toolCallId);
        this.pendingToolCalls = next;
        break;
      }
      case "turn_end":
        if (body.message.errorMessage) this.errorMessage = body.message.errorMessage;
        break;
      case "agent_end":
        this.streamingBase = undefined;
        if (this.streamingDeltas.length > 0) this.streamingDeltas = [];
        break;
      case "model_change":
        this.config = { ...this.config, model: { provider: body.provider, modelId: body.modelId } };
        break;
      case "thinking_level_change":
        this.config = { ...this.config, thinkingLevel: body.thinkingLevel };
        break;
      case "active_tools_change":
        this.config = { ...this.config, activeTools: body.toolNames.slice() };
        break;
    }
  }
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
  private readonly engine: SessionEngine;

  constructor(
    engine: SessionEngine,
    hooks: EngineHooks,
    model: EngineModel,
    config: SessionConfig,
    maxTokens: number | undefined,
    sessionId: string | undefined,
  ) {
    this.engine = engine;
    this.model = model;
    this.thinkingLevel = config.thinkingLevel;
    this.toolExecution = config.toolExecution;
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
