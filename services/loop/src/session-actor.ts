import {
  type AssistantStreamEvent,
  applyConfigPatch,
  applyDeltas,
  buildContext,
  type CommandOf,
  convertToLlm,
  decodeCommand,
  decodeEvent,
  type EventBody,
  emptyMessageQueues,
  emptyUsage,
  entryToContextMessage,
  type FleetCommand,
  type FleetEvent,
  findRunCursor,
  foldRunCursor,
  foldSessionTreeEvents,
  foldSessionTreeInPlace,
  getBranch,
  getEntry,
  type MessageQueues,
  partitionOf,
  prepareCompaction,
  type RejectionCode,
  type RunCursor,
  type SessionConfig,
  type SessionEntry,
  type SessionTree,
  STREAMS,
  type StreamDelta,
  subjects,
} from "@fleet/protocol";
import { type Logger, readSubject, type StreamPublisher } from "@fleet/runtime";
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  type BeforeToolCallResult,
  createSessionEngine,
  type EngineEvent,
  type EngineHooks,
  type RunResult,
  resumePointFromCursor,
  type SessionEngine,
  type StreamFn,
  type ToolDefinition,
} from "./engine/index.js";
import { entriesToEvents } from "./entries-to-events.js";
import { type AppendOutcome, createSessionAppender, type SessionAppender } from "./event-appender.js";
import { composeHooks, type RemoteHookClient } from "./hooks.js";
import { messageFromInput } from "./message-input.js";
import type { LoopMetrics } from "./metrics.js";
import type { CommandDelivery } from "./partition-intake.js";
import { summarizeBranch, summarizeForCompaction } from "./summarizer.js";
import type { ToolDispatcher } from "./tool-dispatcher.js";
import type { ToolRegistry } from "./tool-registry.js";
import { createUpdateCoalescer, type UpdateCoalescer } from "./update-coalescer.js";

export interface ActorSettings {
  coalesceMs: number;
  coalesceDeltas: number;
  hookTimeoutMs: number;
  /** How long "no responders" on a remote hook subject is trusted before asking again (0: never). */
  hookRecheckMs?: number;
  toolTimeoutMs: number;
  /** Config of a session created without one (PROTOCOL "Defaults"). */
  defaults: SessionConfig;
  /** Tools whose calls wait for `approve_tool_call` / `deny_tool_call`. */
  approvalTools: ReadonlySet<string>;
}

export interface ActorDeps {
  nc: NatsConnection;
  js: JetStreamClient;
  /** Appends events (acks matched on one inbox; see @fleet/runtime createStreamPublisher). */
  publisher: StreamPublisher;
  jsm: JetStreamManager;
  sessionId: string;
  partition: number;
  /** P, from `fleet_config.partitions`. */
  partitions: number;
  workerId: string;
  epoch: number;
  now: () => number;
  newId: () => string;
  /** LLM port per provider name (`anthropic`, `scripted`). */
  providers: Readonly<Record<string, StreamFn>>;
  dispatcher: ToolDispatcher;
  registry: ToolRegistry;
  pluginHooks: readonly EngineHooks[];
  /** `fleet.hook.before_tool_call` / `after_tool_call`, shared by the worker's sessions. */
  remoteHooks: RemoteHookClient;
  settings: ActorSettings;
  logger: Logger;
  metrics: LoopMetrics;
  /** The writer was fenced (10071) or a write failed: the worker must drop this actor. */
  onDead: (sessionId: string, why: string) => void;
}

type Outcome = { ok: true } | { ok: false; code: RejectionCode; reason: string };
const reject = (code: RejectionCode, reason: string): Outcome => ({ ok: false, code, reason });
const accept: Outcome = { ok: true };

/** Commands that may create a session that does not exist yet. */
const CREATING = new Set(["create_session", "prompt", "import_session"]);

/**
 * One session on its owning worker: folds the session's log, turns commands into engine calls, and
 * appends the engine's events through the single-writer appender. Contract: `handle` never throws
 * for bad input; every command ends in exactly one `command_accepted` or `command_rejected`,
 * appended before any event the command causes; the command message is acked once that outcome
 * (and, for run-starting commands, the run's first message) is durable.
 */
export class SessionActor {
  readonly sessionId: string;
  private readonly deps: ActorDeps;
  private readonly appender: SessionAppender;
  private readonly log: Logger;
  private readonly coalescer: UpdateCoalescer;
  private tree: SessionTree;
  private cursor: RunCursor;
  /**
   * `message_update` deltas of the streaming assistant message, not yet applied to `cursor.partial`:
   * applied only when the partial message is read (a resume), dropped when `message_end` replaces it.
   */
  private streamedDeltas: StreamDelta[][] = [];
  private queues: MessageQueues;
  private readonly commandIds = new Set<string>();
  private readonly approvals = new Map<string, { approved: boolean; reason?: string | undefined }>();
  private readonly approvalWaiters = new Map<
    string,
    (decision: { approved: boolean; reason?: string | undefined }) => void
  >();
  private readonly requestedApprovals = new Set<string>();
  /** Tool calls of assistant messages this actor appended itself: nobody can have dispatched them yet. */
  private readonly freshToolCalls = new Set<string>();
  private engine: SessionEngine | undefined;
  private ownerAnnounced: boolean;
  private coalescedRunId: string | undefined;
  /** The engine handed over its `agent_end`: observers may already see the run as over. */
  private runEnding = false;
  private messageEndWaiters: Array<() => void> = [];
  private dead = false;
  private detached = false;
  lastUsed: number;

  private constructor(deps: ActorDeps, events: FleetEvent[], lastSeq: number) {
    this.deps = deps;
    this.sessionId = deps.sessionId;
    this.log = deps.logger.child({ sessionId: deps.sessionId, partition: deps.partition });
    this.lastUsed = deps.now();
    this.appender = createSessionAppender({
      publisher: deps.publisher,
      sessionId: deps.sessionId,
      partition: deps.partition,
      producer: deps.workerId,
      lastSeq,
      now: deps.now,
      onAppended: (event, _seq, ms) => {
        deps.metrics.eventsAppended.inc({ type: event.type });
        deps.metrics.appendLatency.observe(ms / 1000);
      },
    });
    this.tree = foldSessionTreeEvents(events);
    this.cursor = findRunCursor([]);
    this.queues = emptyMessageQueues();
    let lastOwner: { workerId: string; epoch: number } | undefined;
    for (const event of events) {
      this.foldState(event);
      if (event.type === "owner_change") lastOwner = { workerId: event.workerId, epoch: event.epoch };
    }
    this.ownerAnnounced = lastOwner?.workerId === deps.workerId && lastOwner.epoch === deps.epoch;
    this.coalescer = createUpdateCoalescer({
      windowMs: deps.settings.coalesceMs,
      maxDeltas: deps.settings.coalesceDeltas,
      flush: async (deltas) => {
        await this.appendOrThrow({ type: "message_update", deltas }, { id: deps.newId(), runId: this.coalescedRunId });
      },
      // A failed flush already killed the actor (appendOrThrow); message_end still carries the full message.
      onError: () => undefined,
    });
    if (this.tree.config) this.engine = this.createEngine();
  }

  /** Reads the session's log and folds it. */
  static async load(deps: ActorDeps): Promise<SessionActor> {
    const events: FleetEvent[] = [];
    let lastSeq = 0;
    const subject = subjects.event(deps.partition, deps.sessionId);
    for await (const rec of readSubject(deps.js, deps.jsm, STREAMS.events.name, subject)) {
      lastSeq = rec.seq;
      const decoded = decodeEvent(rec.data);
      if (decoded.ok) events.push(decoded.value);
      else
        deps.logger.warn({ sessionId: deps.sessionId, seq: rec.seq, error: decoded.error }, "undecodable event in log");
    }
    return new SessionActor(deps, events, lastSeq);
  }

  get isDead(): boolean {
    return this.dead;
  }

  get isRunning(): boolean {
    return this.engine?.state.isStreaming ?? false;
  }

  /** Resumes a run the log shows as interrupted (after a takeover). */
  async resumeIfInterrupted(): Promise<void> {
    const engine = this.engine;
    if (!engine || engine.state.isStreaming) return;
    const point = resumePointFromCursor(this.runCursor(), `worker ${this.deps.workerId} took over`);
    if (!point) return;
    this.log.info({ evt: "run_resume", runId: point.runId, at: point.at }, "resuming interrupted run");
    await this.announceOwner();
    this.trackRun(engine.resume(point));
  }

  /** Resolves once no run is active (or after `ms`). */
  async waitForIdle(ms: number): Promise<boolean> {
    const engine = this.engine;
    if (!engine?.state.isStreaming) return true;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    });
    const idle = engine.waitForIdle().then(() => true);
    const result = await Promise.race([idle, timeout]);
    clearTimeout(timer);
    return result;
  }

  /**
   * Stops this actor without writing anything more: the run in flight (if any) is cut, and the next
   * owner resumes it from the log.
   */
  detach(): void {
    this.detached = true;
    this.coalescer.dispose();
    this.engine?.abort();
  }

  // ---- commands ---------------------------------------------------------------------------------

  async handle(delivery: CommandDelivery): Promise<void> {
    this.lastUsed = this.deps.now();
    if (this.dead) {
      delivery.msg.nak(500);
      return;
    }
    const decoded = decodeCommand(delivery.data);
    if (!decoded.ok) {
      const commandId = delivery.hasMsgId ? delivery.commandRef : (decoded.commandId ?? delivery.commandRef);
      if (this.commandIds.has(commandId)) return this.ack(delivery);
      await this.outcome(commandId, decoded.commandType, reject(decoded.code, decoded.error));
      return this.ack(delivery);
    }
    const cmd = decoded.value;
    if (this.commandIds.has(cmd.id)) {
      await this.restartUnstartedRun(cmd);
      return this.ack(delivery);
    }
    if (cmd.sessionId !== this.sessionId) {
      await this.outcome(
        cmd.id,
        cmd.type,
        reject(
          "invalid",
          `sessionId ${JSON.stringify(cmd.sessionId)} differs from the subject's session ${JSON.stringify(this.sessionId)}`,
        ),
      );
      return this.ack(delivery);
    }
    if (!this.tree.config && !CREATING.has(cmd.type)) {
      await this.outcome(cmd.id, cmd.type, reject("not_found", `Session ${this.sessionId} not found`));
      return this.ack(delivery);
    }
    try {
      await this.dispatch(cmd);
    } catch (err) {
      this.log.error({ err, commandId: cmd.id }, "command failed");
      if (this.dead) return;
    }
    this.ack(delivery);
  }

  private ack(delivery: CommandDelivery) {
    if (this.dead) return;
    delivery.msg.ack();
    this.deps.metrics.commandLag.observe(Math.max(0, this.deps.now() - delivery.time) / 1000);
  }

  private async outcome(commandId: string, commandType: string, out: Outcome): Promise<boolean> {
    await this.announceOwner();
    if (out.ok) {
      await this.appendOrThrow({ type: "command_accepted", commandId, commandType }, { id: this.deps.newId() });
      return true;
    }
    await this.appendOrThrow(
      { type: "command_rejected", commandId, commandType, code: out.code, reason: out.reason },
      { id: this.deps.newId() },
    );
    return false;
  }

  private async dispatch(cmd: FleetCommand): Promise<void> {
    await this.settleEndedRun();
    switch (cmd.type) {
      case "create_session":
        return this.createSession(cmd);
      case "import_session":
        return this.importSession(cmd);
      case "prompt":
        return this.prompt(cmd);
      case "steer":
      case "follow_up":
      case "next_turn": {
        await this.outcome(cmd.id, cmd.type, accept);
        const message = messageFromInput(cmd, this.deps.now());
        const engine = this.requireEngine();
        if (cmd.type === "steer") await engine.steer(message);
        else if (cmd.type === "follow_up") await engine.followUp(message);
        else await engine.nextTurn(message);
        return;
      }
      case "continue": {
        const engine = this.requireEngine();
        this.refreshTools(engine);
        const refused = engine.checkContinue();
        if (refused) {
          await this.outcome(cmd.id, cmd.type, reject(refused.code, refused.reason));
          return;
        }
        await this.outcome(cmd.id, cmd.type, accept);
        await this.startRun(() => engine.continue());
        return;
      }
      case "abort":
        await this.outcome(cmd.id, cmd.type, accept);
        this.engine?.abort();
        for (const [id, waiter] of this.approvalWaiters) {
          this.approvalWaiters.delete(id);
          waiter({ approved: false, reason: "Operation aborted" });
        }
        return;
      case "set_model":
        await this.outcome(cmd.id, cmd.type, accept);
        await this.requireEngine().setModel({ provider: cmd.provider, modelId: cmd.modelId });
        return;
      case "set_thinking_level":
        await this.outcome(cmd.id, cmd.type, accept);
        await this.requireEngine().setThinkingLevel(cmd.level);
        return;
      case "set_active_tools": {
        const unknown = cmd.toolNames.filter((n) => !this.deps.registry.get(n));
        if (unknown.length > 0) {
          await this.outcome(
            cmd.id,
            cmd.type,
            reject("not_found", `Unknown tool${unknown.length > 1 ? "s" : ""}: ${unknown.join(", ")}`),
          );
          return;
        }
        await this.outcome(cmd.id, cmd.type, accept);
        await this.requireEngine().setActiveTools(cmd.toolNames);
        return;
      }
      case "configure":
        return this.configure(cmd);
      case "compact":
        return this.compact(cmd);
      case "navigate":
        return this.navigate(cmd);
      case "label": {
        if (!getEntry(this.tree, cmd.targetId).ok) {
          await this.outcome(cmd.id, cmd.type, reject("not_found", `Entry ${cmd.targetId} not found`));
          return;
        }
        await this.outcome(cmd.id, cmd.type, accept);
        await this.requireEngine().setLabel(cmd.targetId, cmd.label);
        return;
      }
      case "set_name":
        await this.outcome(cmd.id, cmd.type, accept);
        await this.requireEngine().setName(cmd.name);
        return;
      case "append_custom":
        await this.outcome(cmd.id, cmd.type, accept);
        await this.requireEngine().appendCustom(cmd.customType, cmd.data);
        return;
      case "append_message": {
        const engine = this.requireEngine();
        if (cmd.deliverAs) {
          await this.outcome(cmd.id, cmd.type, accept);
          if (cmd.deliverAs === "steer") await engine.steer(cmd.message);
          else if (cmd.deliverAs === "followUp") await engine.followUp(cmd.message);
          else await engine.nextTurn(cmd.message);
          return;
        }
        if (cmd.triggerTurn && !engine.state.isStreaming) {
          await this.outcome(cmd.id, cmd.type, accept);
          this.refreshTools(engine);
          await this.startRun(() => engine.prompt(cmd.message));
          return;
        }
        await this.outcome(cmd.id, cmd.type, accept);
        await engine.appendMessage(cmd.message);
        return;
      }
      case "approve_tool_call":
      case "deny_tool_call": {
        const waiter = this.approvalWaiters.get(cmd.toolCallId);
        if (!waiter) {
          await this.outcome(
            cmd.id,
            cmd.type,
            reject("not_found", `No tool call ${cmd.toolCallId} is waiting for approval`),
          );
          return;
        }
        await this.outcome(cmd.id, cmd.type, accept);
        const decision =
          cmd.type === "approve_tool_call" ? { approved: true } : { approved: false, reason: cmd.reason };
        await this.appendOrThrow(
          { type: "tool_approval_resolved", toolCallId: cmd.toolCallId, ...decision },
          { id: this.deps.newId(), runId: this.engine?.state.runId },
        );
        this.approvalWaiters.delete(cmd.toolCallId);
        waiter(decision);
        return;
      }
      default: {
        const unknown = cmd as { id: string; type: string };
        await this.outcome(unknown.id, unknown.type, reject("unsupported", `unsupported command type ${unknown.type}`));
      }
    }
  }

  /**
   * The log is the truth: once `agent_end` is appended the run is over for every observer, even if
   * the engine is still settling in memory. A command that follows it waits for that, instead of
   * seeing a stale `busy`.
   */
  private async settleEndedRun() {
    const engine = this.engine;
    if (engine?.state.isStreaming && (this.cursor.kind === "idle" || this.runEnding)) await engine.waitForIdle();
  }

  private async createSession(cmd: CommandOf<"create_session">) {
    if (this.tree.config) {
      await this.outcome(cmd.id, cmd.type, reject("conflict", `Session ${this.sessionId} already exists`));
      return;
    }
    let forkEntries: SessionEntry[] = [];
    if (cmd.forkFrom) {
      const source = await this.readTree(cmd.forkFrom.sessionId);
      if (!source.config) {
        await this.outcome(cmd.id, cmd.type, reject("not_found", `Session ${cmd.forkFrom.sessionId} not found`));
        return;
      }
      const branch = getBranch(source, cmd.forkFrom.entryId);
      if (!branch.ok) {
        await this.outcome(cmd.id, cmd.type, reject("not_found", branch.error));
        return;
      }
      forkEntries = branch.entries;
      const config = applyConfigPatch(source.config, cmd.config ?? {});
      await this.outcome(cmd.id, cmd.type, accept);
      await this.appendOrThrow(
        { type: "session_created", config, forkedFrom: cmd.forkFrom },
        { id: this.deps.newId() },
      );
      await this.appendEntries(forkEntries, undefined);
      return;
    }
    await this.outcome(cmd.id, cmd.type, accept);
    const config = applyConfigPatch(this.deps.settings.defaults, cmd.config ?? {});
    await this.appendOrThrow({ type: "session_created", config }, { id: this.deps.newId() });
    this.engine = this.createEngine();
  }

  private async importSession(cmd: CommandOf<"import_session">) {
    if (this.tree.config) {
      await this.outcome(cmd.id, cmd.type, reject("conflict", `Session ${this.sessionId} already exists`));
      return;
    }
    const ids = new Set<string>();
    for (const e of cmd.entries) {
      if (ids.has(e.id)) {
        await this.outcome(cmd.id, cmd.type, reject("invalid", `duplicate entry id ${e.id}`));
        return;
      }
      if (e.parentId !== null && !ids.has(e.parentId)) {
        await this.outcome(cmd.id, cmd.type, reject("invalid", `entry ${e.id} comes before its parent ${e.parentId}`));
        return;
      }
      ids.add(e.id);
    }
    if (cmd.leafId && !ids.has(cmd.leafId)) {
      await this.outcome(cmd.id, cmd.type, reject("not_found", `Entry ${cmd.leafId} not found`));
      return;
    }
    await this.outcome(cmd.id, cmd.type, accept);
    const config = applyConfigPatch(this.deps.settings.defaults, cmd.config ?? {});
    await this.appendOrThrow({ type: "session_created", config }, { id: this.deps.newId() });
    await this.appendEntries(cmd.entries, cmd.leafId);
  }

  /** Appends a copied tree as entry events (fresh ids), moves the leaf, and rebuilds the engine. */
  private async appendEntries(entries: readonly SessionEntry[], leafId: string | null | undefined) {
    const { events, idMap } = entriesToEvents(entries, this.deps.newId);
    for (const e of events) await this.appendOrThrow(e.body, { id: e.id, ts: e.ts });
    const wantedLeaf = leafId === undefined ? undefined : leafId === null ? null : (idMap.get(leafId) ?? null);
    if (wantedLeaf !== undefined && wantedLeaf !== this.tree.leafId) {
      await this.appendOrThrow({ type: "leaf", targetId: wantedLeaf }, { id: this.deps.newId() });
    }
    this.engine = this.createEngine();
  }

  private async prompt(cmd: CommandOf<"prompt">) {
    const engine = this.engine;
    if (engine?.state.isStreaming) {
      const busy = engine.checkPrompt();
      await this.outcome(cmd.id, cmd.type, reject("busy", busy?.reason ?? "busy"));
      return;
    }
    await this.outcome(cmd.id, cmd.type, accept);
    if (!this.tree.config) {
      await this.appendOrThrow(
        { type: "session_created", config: this.deps.settings.defaults },
        { id: this.deps.newId() },
      );
      this.engine = this.createEngine();
    }
    const current = this.requireEngine();
    this.refreshTools(current);
    const message = messageFromInput(cmd, this.deps.now());
    await this.startRun(() => current.prompt(message));
  }

  /** A run-starting command that was accepted before a crash but whose run never began. */
  private async restartUnstartedRun(cmd: FleetCommand) {
    const engine = this.engine;
    if (!engine || engine.state.isStreaming) return;
    if (this.cursor.kind !== "idle" || this.cursor.pendingTrigger?.commandId !== cmd.id) return;
    this.refreshTools(engine);
    if (cmd.type === "prompt") await this.startRun(() => engine.prompt(messageFromInput(cmd, this.deps.now())));
    else if (cmd.type === "continue" && !engine.checkContinue()) await this.startRun(() => engine.continue());
  }

  private async configure(cmd: CommandOf<"configure">) {
    const engine = this.requireEngine();
    if (cmd.activeTools) {
      const unknown = cmd.activeTools.filter((n) => !this.deps.registry.get(n));
      if (unknown.length > 0) {
        await this.outcome(cmd.id, cmd.type, reject("not_found", `Unknown tools: ${unknown.join(", ")}`));
        return;
      }
    }
    await this.outcome(cmd.id, cmd.type, accept);
    if (cmd.model) await engine.setModel(cmd.model);
    if (cmd.thinkingLevel) await engine.setThinkingLevel(cmd.thinkingLevel);
    if (cmd.activeTools) await engine.setActiveTools(cmd.activeTools);
    const patch = {
      ...(cmd.systemPrompt !== undefined ? { systemPrompt: cmd.systemPrompt } : {}),
      ...(cmd.steeringMode ? { steeringMode: cmd.steeringMode } : {}),
      ...(cmd.followUpMode ? { followUpMode: cmd.followUpMode } : {}),
      ...(cmd.toolExecution ? { toolExecution: cmd.toolExecution } : {}),
    };
    if (Object.keys(patch).length > 0) {
      await this.appendOrThrow(
        { type: "config_change", ...patch },
        { id: this.deps.newId(), runId: engine.state.runId },
      );
      engine.configure(patch);
    }
  }

  private async compact(cmd: CommandOf<"compact">) {
    const engine = this.requireEngine();
    if (engine.state.isStreaming) {
      await this.outcome(cmd.id, cmd.type, reject("busy", "Cannot compact while a run is active"));
      return;
    }
    const branch = getBranch(this.tree, this.tree.leafId);
    if (!branch.ok) {
      await this.outcome(cmd.id, cmd.type, reject("not_found", branch.error));
      return;
    }
    const plan = prepareCompaction(branch.entries);
    if (!plan.ok) {
      await this.outcome(cmd.id, cmd.type, reject("conflict", plan.error));
      return;
    }
    const state = engine.state;
    // Summarising causes no event, so it runs before the outcome: a failed summary is a rejection.
    const summary = await summarizeForCompaction({
      streamFn: this.streamFnFor(state.model.provider),
      model: state.model,
      thinkingLevel: state.thinkingLevel,
      plan,
      instructions: cmd.instructions,
      now: this.deps.now,
    });
    if (!summary.ok) {
      await this.outcome(cmd.id, cmd.type, reject("conflict", summary.error));
      return;
    }
    await this.outcome(cmd.id, cmd.type, accept);
    const id = this.deps.newId();
    await this.appendOrThrow(
      {
        type: "compaction",
        summary: summary.summary,
        firstKeptEntryId: plan.firstKeptEntryId,
        tokensBefore: plan.tokensBefore,
        details: { readFiles: plan.readFiles, modifiedFiles: plan.modifiedFiles },
        entry: { id, parentId: this.tree.leafId },
      },
      { id },
    );
    this.syncEngineContext();
  }

  private async navigate(cmd: CommandOf<"navigate">) {
    const engine = this.requireEngine();
    if (engine.state.isStreaming) {
      await this.outcome(cmd.id, cmd.type, reject("busy", "Cannot navigate while a run is active"));
      return;
    }
    let newLeaf: string | null = null;
    if (cmd.targetId !== null) {
      const target = getEntry(this.tree, cmd.targetId);
      if (!target.ok) {
        await this.outcome(cmd.id, cmd.type, reject("not_found", target.error));
        return;
      }
      const t = target.entry;
      // pi: navigating to a user message (or custom message) re-opens it for editing: leaf = its parent.
      newLeaf = (t.type === "message" && t.message.role === "user") || t.type === "custom_message" ? t.parentId : t.id;
    }
    const oldLeaf = this.tree.leafId;
    let summary: string | undefined;
    if (cmd.summarize && oldLeaf !== null && newLeaf !== oldLeaf) {
      const messages = this.entriesLeft(oldLeaf, newLeaf)
        .map((e) => entryToContextMessage(e))
        .filter((m): m is NonNullable<typeof m> => m !== undefined && m.role !== "toolResult");
      const state = engine.state;
      const result = await summarizeBranch({
        streamFn: this.streamFnFor(state.model.provider),
        model: state.model,
        thinkingLevel: state.thinkingLevel,
        messages,
        instructions: cmd.instructions,
        now: this.deps.now,
      });
      if (!result.ok) {
        await this.outcome(cmd.id, cmd.type, reject("conflict", result.error));
        return;
      }
      summary = result.summary;
    }
    await this.outcome(cmd.id, cmd.type, accept);
    if (newLeaf === oldLeaf && summary === undefined) {
      if (cmd.label && cmd.targetId) await engine.setLabel(cmd.targetId, cmd.label);
      return;
    }
    let labelTarget: string | null = cmd.targetId;
    if (summary !== undefined) {
      const id = this.deps.newId();
      await this.appendOrThrow(
        { type: "branch_summary", fromId: newLeaf ?? "root", summary, entry: { id, parentId: newLeaf } },
        { id },
      );
      labelTarget = id;
    } else {
      await this.appendOrThrow({ type: "leaf", targetId: newLeaf }, { id: this.deps.newId() });
    }
    this.syncEngineContext();
    if (cmd.label && labelTarget) await engine.setLabel(labelTarget, cmd.label);
  }

  /** Entries on the old branch below the deepest common ancestor with the new leaf, oldest first. */
  private entriesLeft(oldLeaf: string, newLeaf: string | null): SessionEntry[] {
    const oldPath = getBranch(this.tree, oldLeaf);
    const newPath = getBranch(this.tree, newLeaf);
    if (!oldPath.ok || !newPath.ok) return [];
    const common = new Set(newPath.entries.map((e) => e.id));
    return oldPath.entries.filter((e) => !common.has(e.id));
  }

  private syncEngineContext() {
    const ctx = buildContext(this.tree, this.tree.leafId);
    if (ctx.ok) this.engine?.replaceContext(ctx.messages, this.tree.leafId);
  }

  // ---- runs -------------------------------------------------------------------------------------

  /** Starts a run and resolves once its first message is durable (or the run settled). */
  private async startRun(start: () => Promise<RunResult>): Promise<void> {
    const firstMessage = new Promise<void>((resolve) => this.messageEndWaiters.push(resolve));
    const run = this.trackRun(start());
    await Promise.race([firstMessage, run]);
  }

  private trackRun(run: Promise<RunResult>): Promise<void> {
    this.deps.metrics.activeRuns.inc();
    return run
      .then(async (result) => {
        if (result.status === "emit_failed" && !this.detached) this.kill(`write failed: ${result.error.message}`);
        await this.coalescer.drain().catch(() => undefined);
      })
      .catch((err) => this.kill(`run failed: ${(err as Error).message}`))
      .finally(() => {
        this.deps.metrics.activeRuns.dec();
        this.lastUsed = this.deps.now();
        for (const w of this.messageEndWaiters.splice(0)) w();
      });
  }

  private createEngine(): SessionEngine {
    const config = this.tree.config as SessionConfig;
    const ctx = buildContext(this.tree, this.tree.leafId);
    const messages = ctx.ok ? ctx.messages : [];
    const deps = this.deps;
    const engineHooks = composeHooks([
      // pi coding-agent's conversion (summaries and custom messages become user text); plugins may replace it.
      { convertToLlm },
      ...deps.pluginHooks,
      deps.remoteHooks.forSession(this.sessionId),
      { beforeToolCall: (c, signal) => this.approvalGate(c.toolCall.id, c.toolCall.name, c.args, signal) },
    ]);
    return createSessionEngine({
      sessionId: this.sessionId,
      tools: this.toolDefinitions(),
      hooks: engineHooks,
      init: {
        messages,
        leafId: this.tree.leafId,
        config: {
          ...config,
          model: (ctx.ok ? ctx.model : null) ?? config.model,
          thinkingLevel: ctx.ok ? ctx.thinkingLevel : config.thinkingLevel,
          activeTools: ctx.ok ? ctx.activeToolNames : config.activeTools,
        },
        queues: this.queues,
      },
      ports: {
        now: deps.now,
        newId: deps.newId,
        emit: (event) => this.emit(event),
        streamFn: (context, options, signal) =>
          timeToFirstDelta(this.streamFnFor(options.model.provider)(context, options, signal), deps.now, (ms) =>
            deps.metrics.timeToFirstToken.observe(ms / 1000),
          ),
        executeTool: async (call, signal, onUpdate) => {
          const started = deps.now();
          const reg = deps.registry.get(call.toolName);
          const result = await deps.dispatcher.execute(
            {
              sessionId: this.sessionId,
              runId: this.engine?.state.runId ?? "",
              toolCallId: call.toolCallId,
              toolName: call.toolName,
              args: call.args,
              timeoutMs: reg?.timeoutMs ?? deps.settings.toolTimeoutMs,
              fresh: this.freshToolCalls.delete(call.toolCallId),
            },
            signal ?? new AbortController().signal,
            onUpdate,
          );
          deps.metrics.toolLatency.observe({ tool: call.toolName }, (deps.now() - started) / 1000);
          return result;
        },
      },
    });
  }

  private streamFnFor(provider: string): StreamFn {
    const fn = this.deps.providers[provider];
    if (fn) return fn;
    const now = this.deps.now;
    return async function* unknownProvider(_ctx, options) {
      yield {
        type: "error",
        reason: "error",
        error: {
          role: "assistant",
          content: [],
          api: "unknown",
          provider,
          model: options.model.modelId,
          usage: emptyUsage(),
          stopReason: "error",
          errorMessage: `Unknown provider: ${provider}`,
          timestamp: now(),
        },
      };
    };
  }

  private toolDefinitions(): ToolDefinition[] {
    return this.deps.registry.all().map((t) => ({
      name: t.name,
      description: t.description,
      parameters: t.parameters,
      executionMode: t.executionMode,
    }));
  }

  private refreshTools(engine: SessionEngine) {
    engine.setTools(this.toolDefinitions());
  }

  /** Calls of approval-gated tools wait for a person's decision, recorded in the log. */
  private async approvalGate(
    toolCallId: string,
    toolName: string,
    args: unknown,
    signal: AbortSignal | undefined,
  ): Promise<BeforeToolCallResult | undefined> {
    if (!this.deps.settings.approvalTools.has(toolName)) return undefined;
    const decided = this.approvals.get(toolCallId);
    const decision =
      decided ??
      (await new Promise<{ approved: boolean; reason?: string | undefined }>((resolve) => {
        this.approvalWaiters.set(toolCallId, resolve);
        signal?.addEventListener("abort", () => resolve({ approved: false, reason: "Operation aborted" }), {
          once: true,
        });
        if (!this.requestedApprovals.has(toolCallId)) {
          void this.coalescer
            .drain()
            .then(() =>
              this.appendOrThrow(
                { type: "tool_approval_requested", toolCallId, toolName, args },
                { id: this.deps.newId(), runId: this.engine?.state.runId },
              ),
            )
            .catch(() => resolve({ approved: false, reason: "approval request could not be recorded" }));
        }
      }));
    this.approvalWaiters.delete(toolCallId);
    return decision.approved ? undefined : { block: true, reason: decision.reason ?? "Tool call denied" };
  }

  // ---- the write path ---------------------------------------------------------------------------

  private async emit(event: EngineEvent): Promise<void> {
    if (this.detached) throw new Error("actor detached");
    if (event.body.type === "agent_start" || event.body.type === "run_resumed") this.runEnding = false;
    else if (event.body.type === "agent_end") this.runEnding = true;
    if (event.body.type === "message_update") {
      this.coalescedRunId = event.runId;
      this.coalescer.push(event.body.deltas);
      return;
    }
    await this.coalescer.drain();
    await this.appendOrThrow(event.body, { id: event.id, runId: event.runId });
    if (event.body.type === "message_end" && event.body.message.role === "assistant") {
      for (const c of event.body.message.content) if (c.type === "toolCall") this.freshToolCalls.add(c.id);
    } else if (event.body.type === "agent_end") this.freshToolCalls.clear();
  }

  private async announceOwner() {
    if (this.ownerAnnounced) return;
    this.ownerAnnounced = true;
    await this.appendOrThrow(
      { type: "owner_change", workerId: this.deps.workerId, partition: this.deps.partition, epoch: this.deps.epoch },
      { id: this.deps.newId() },
    );
  }

  /**
   * Appends one event and folds it into the actor's view. Throws when the append failed; a fenced
   * writer kills the actor.
   */
  private async appendOrThrow(
    body: EventBody,
    stamp: { id: string; runId?: string | undefined; ts?: number },
  ): Promise<void> {
    if (this.detached) throw new Error("actor detached");
    if (!this.ownerAnnounced && body.type !== "owner_change") await this.announceOwner();
    const out: AppendOutcome = await this.appender.append(body, stamp);
    if (!out.ok) {
      if (out.kind === "fenced") {
        this.deps.metrics.fencedSessions.inc();
        this.log.warn({ evt: "fenced", error: out.error }, "fenced by another writer; dropping the session");
        this.kill("fenced");
      } else if (out.kind === "failed") {
        this.kill(`append failed: ${out.error}`);
      }
      throw new Error(`append of ${body.type} failed (${out.kind}): ${out.error}`);
    }
    this.fold(out.event);
    if (out.event.type === "message_end") for (const w of this.messageEndWaiters.splice(0)) w();
  }

  /** The run cursor with every buffered delta applied. */
  private runCursor(): RunCursor {
    if (this.streamedDeltas.length > 0 && this.cursor.kind === "streaming") {
      this.cursor = { ...this.cursor, partial: applyDeltas(this.cursor.partial, this.streamedDeltas.flat()) };
    }
    this.streamedDeltas = [];
    return this.cursor;
  }

  private fold(event: FleetEvent) {
    foldSessionTreeInPlace(this.tree, event);
    this.foldState(event);
  }

  /** Everything but the tree (which a log is folded into at once: see `foldSessionTreeEvents`). */
  private foldState(event: FleetEvent) {
    if (event.type === "message_update" && this.cursor.kind === "streaming") this.streamedDeltas.push(event.deltas);
    else if (event.type === "message_end" || event.type === "agent_start") {
      this.streamedDeltas = [];
      this.cursor = foldRunCursor(this.cursor, event);
    } else this.cursor = foldRunCursor(this.runCursor(), event);
    switch (event.type) {
      case "command_accepted":
      case "command_rejected":
        this.commandIds.add(event.commandId);
        break;
      case "queue_update":
        this.queues = { steer: event.steer, followUp: event.followUp, nextTurn: event.nextTurn };
        break;
      case "tool_approval_requested":
        this.requestedApprovals.add(event.toolCallId);
        break;
      case "tool_approval_resolved":
        this.approvals.set(event.toolCallId, { approved: event.approved, reason: event.reason });
        break;
    }
  }

  private kill(why: string) {
    if (this.dead) return;
    this.dead = true;
    this.detached = true;
    this.coalescer.dispose();
    this.engine?.abort();
    this.deps.onDead(this.sessionId, why);
  }

  private requireEngine(): SessionEngine {
    if (!this.engine) this.engine = this.createEngine();
    return this.engine;
  }

  private async readTree(sessionId: string): Promise<SessionTree> {
    const events: FleetEvent[] = [];
    const subject = subjects.event(partitionOf(sessionId, this.deps.partitions), sessionId);
    for await (const rec of readSubject(this.deps.js, this.deps.jsm, STREAMS.events.name, subject)) {
      const decoded = decodeEvent(rec.data);
      if (decoded.ok) events.push(decoded.value);
    }
    return foldSessionTreeEvents(events);
  }
}

/**
 * Passes a stream through, reporting the time from the request to its first content delta. A plain
 * iterator rather than an async generator: after the first delta each item costs no extra promise.
 */
function timeToFirstDelta(
  stream: AsyncIterable<AssistantStreamEvent>,
  now: () => number,
  report: (ms: number) => void,
): AsyncIterable<AssistantStreamEvent> {
  return {
    [Symbol.asyncIterator]() {
      const inner = stream[Symbol.asyncIterator]();
      const started = now();
      let first = true;
      const check = (r: IteratorResult<AssistantStreamEvent>) => {
        if (first && !r.done && r.value.type.endsWith("_delta")) {
          first = false;
          report(now() - started);
        }
        return r;
      };
      return {
        next: () => (first ? inner.next().then(check) : inner.next()),
        return: (value?: unknown) => inner.return?.(value) ?? Promise.resolve({ done: true as const, value }),
        throw: (err?: unknown) => inner.throw?.(err) ?? Promise.reject(err),
      };
    },
  };
}
