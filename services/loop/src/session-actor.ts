import {
  AGENT_TOOL_NAME,
  type AgentVersion,
  type ApprovalLayer,
  type ApprovalRule,
  chatTraceparent,
  compactionSettingsOf,
  convertToLlm,
  DEFAULT_MAX_INPUT_BYTES,
  decodeEvent,
  eventStreamOfPartition,
  type FleetCommand,
  type FleetEvent,
  foldSessionEvents,
  foldSessionTreeEvents,
  foldTraceCursor,
  getBranch,
  type ModelRef,
  parseArchive,
  partitionOf,
  prepareCompaction,
  runCursorOf,
  type SessionConfig,
  type SessionState,
  type SessionTree,
  subjects,
  type TraceCursor,
  toolTraceparent,
  workerApprovalLayer,
} from "@fleet/protocol";
import {
  type AgentStore,
  AgentStoreError,
  type BlobAccess,
  type Logger,
  type PublishFailure,
  publishFailureCause,
  readSubject,
  resolveBlobBlocks,
  type StreamPublisher,
  sleep,
} from "@fleet/runtime";
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { guardBudget } from "./budget-guard.js";
import {
  APPROVAL_TEXT,
  decideApprovalExpiry,
  decideApprovalGate,
  type GateStep,
  stepOfDecision,
} from "./decide/approval-gate.js";
import { childPromptRefusal, childrenToClose, decideChildCall } from "./decide/decide-child.js";
import { decideCommand } from "./decide/decide-command.js";
import { tombstoneDraft } from "./decide/decide-lifecycle.js";
import { decideRedelivered } from "./decide/decide-redelivered.js";
import type { DecideContext, Decision, Effect } from "./decide/decision.js";
import type { DraftEvent } from "./decide/drafts.js";
import { stampDraft } from "./decide/stamp-draft.js";
import { unstartedRun } from "./decide/unstarted-run.js";
import {
  type BeforeToolCallResult,
  createSessionEngine,
  type EngineEvent,
  type EngineHooks,
  type RunResult,
  resumePointFromCursor,
  type SessionEngine,
  type StreamFn,
  type StreamOptions,
  type ToolDefinition,
  validateToolArguments,
} from "./engine/index.js";
import { createSessionAppender, type SessionAppender } from "./event-appender.js";
import { type HookServers, type HookSessionPort, withHookServers, withPayloadHook } from "./hook-servers.js";
import { composeHooks, type RemoteHookClient } from "./hooks.js";
import { acceptsCommand, InputUnavailableError, keepParts, readCommand } from "./input-reader.js";
import type { LifecycleDeps } from "./lifecycle/lifecycle-deps.js";
import { type LifecycleMarks, markLifecycle, restoreOpen } from "./lifecycle/lifecycle-marks.js";
import { lastLifecycleRecord } from "./lifecycle/lifecycle-records.js";
import { runDeletion } from "./lifecycle/run-deletion.js";
import { runRestore } from "./lifecycle/run-restore.js";
import type { LoopMetrics } from "./metrics.js";
import { openWorkOf } from "./open-work/open-work.js";
import type { OpenWorkIndex } from "./open-work/open-work-index.js";
import { createSessionIndexEntry, type SessionIndexEntry } from "./open-work/session-index-entry.js";
import type { CommandDelivery } from "./partition-intake.js";
import { streamFnFor } from "./provider-port.js";
import { getModelInfo, type ModelInfo } from "./providers/models.js";
import { createReplayDriver, recordedToolResult } from "./replay-driver.js";
import { resolvingBlobs } from "./resolving-blobs.js";
import type { RunTraceSink } from "./run-trace-sink.js";
import { createSessionBudget, type SessionBudget } from "./session-budget.js";
import { type LoadedSession, loadSession, type SnapshotSettings } from "./snapshots/session-load.js";
import { createSnapshotWriter, type SnapshotWriter } from "./snapshots/snapshot-writer.js";
import { agentCallOrdinal } from "./sub-agents/agent-call-ordinal.js";
import type { SubAgentPort } from "./sub-agents/sub-agent-port.js";
import { summarizeBranch, summarizeForCompaction } from "./summarizer.js";
import type { TenantBudgetView } from "./tenant-budget-view.js";
import { timeToFirstDelta } from "./time-to-first-delta.js";
import type { ToolDispatcher } from "./tool-dispatcher.js";
import type { ToolRegistry } from "./tool-registry.js";
import { createUpdateCoalescer, type UpdateCoalescer } from "./update-coalescer.js";

export interface ActorSettings {
  coalesceMs: number;
  coalesceDeltas: number;
  hookTimeoutMs: number;
  /** How long "no responders" on a remote hook subject is trusted before asking again (0: never). */
  hookRecheckMs?: number;
  /** Named hook servers, in the order they are asked (change 53); empty or absent: none. */
  hookServers?: readonly string[];
  toolTimeoutMs: number;
  /** Config of a session created without one (PROTOCOL "Defaults"). */
  defaults: SessionConfig;
  /** Tools whose calls wait for `approve_tool_call` / `deny_tool_call`. */
  approvalTools: ReadonlySet<string>;
  /** Largest command decoded (`FLEET_MAX_COMMAND_BYTES`; default the protocol's). */
  maxCommandBytes?: number;
  /** Largest command body by reference read (`FLEET_MAX_INPUT_BYTES`; default the protocol's). */
  maxInputBytes?: number;
  /**
   * Whether each appended event is checked against the `FleetEvent` schema before it is written
   * (`FLEET_VALIDATE_APPENDS`; default true here, false in the service). Off, it is serialised as
   * built (`encodeBuiltEvent`), with the same size limit.
   */
  validateAppends?: boolean;
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
  /** K, from `fleet_config.stream_groups` (default 1): names the event streams. */
  groups?: number;
  workerId: string;
  epoch: number;
  /** The partition lease's write fence (see SessionAppender `writeGate`). */
  writeGate?: () => boolean | Promise<boolean>;
  now: () => number;
  newId: () => string;
  /** LLM port per provider name (`anthropic`, `scripted`, pi-ai's providers). */
  providers: Readonly<Record<string, StreamFn>>;
  /** Context window and prices of a model (`ModelCatalog.info`); default Fleet's Anthropic table. */
  modelInfo?: (model: ModelRef) => ModelInfo;
  dispatcher: ToolDispatcher;
  registry: ToolRegistry;
  pluginHooks: readonly EngineHooks[];
  /** `fleet.hook.before_tool_call` / `after_tool_call`, shared by the worker's sessions. */
  remoteHooks: RemoteHookClient;
  /** Named hook servers (`FLEET_HOOK_SERVERS`, change 53); absent: none, and no cost. */
  hookServers?: HookServers;
  /** The tenant's daily limits and spend (KV `fleet_budgets`, `fleet_spend_totals`); absent: no tenant budget. */
  tenantBudget?: TenantBudgetView;
  /** The tenant's agents (KV `fleet_agents`); absent: a command naming an agent finds none. */
  agents?: AgentStore;
  /** The tenant's approval rules (KV `fleet_config` `approval_rules`); absent: none. */
  tenantApprovalRules?: { rules(): readonly ApprovalRule[] };
  /** The object stores: command inputs by reference, and content by reference for the LLM. */
  blobs: BlobAccess;
  settings: ActorSettings;
  logger: Logger;
  metrics: LoopMetrics;
  /** The writer was fenced (10071) or a write failed: the worker must drop this actor. */
  onDead: (sessionId: string, why: string) => void;
  /** Deletions, archives and restores; absent: the lifecycle commands are decided but not carried out. */
  lifecycle?: LifecycleDeps;
  /** The session was deleted: the worker forgets this actor (the next command loads the empty log). */
  onRemoved?: (sessionId: string) => void;
  /** Snapshots of session folds (PROTOCOL change 42); absent: every load folds the whole log. */
  snapshots?: SnapshotSettings;
  /** Receives the session's log as loaded and each appended event (the span exporter); absent: none. */
  traces?: RunTraceSink;
  /** The partition's open-work index (change 41); absent: not kept (tests of the actor alone). */
  openWork?: OpenWorkIndex;
  /** Sub-agents (change 57): the `agent` tool and a child's reports to its parent; absent: no `agent` tool. */
  subAgents?: SubAgentPort;
}

const NOTHING: Decision = { kind: "decided", events: [], effects: [] };

/** When a command whose inputs could not be read or copied is delivered again. */
const INPUT_RETRY_MS = 1_000;

/**
 * One session on its owning worker, as a thin shell around the session decider: it loads and folds
 * the session's log (`SessionState`, the protocol's one fold), decides each command
 * (`decideCommand`), appends the decided events through the fenced single-writer appender, folding
 * each once it is durable, and runs the decided effects (a run in the engine, which reads the same
 * fold; a compaction; an abort). It keeps nothing the log does not hold, except what is in flight
 * (the engine's run, a compaction's LLM call, the gates waiting on the log).
 * Contract: `handle` never throws for bad input; every command ends in exactly one
 * `command_accepted` or `command_rejected`, appended before any event the command causes; the
 * command message is acked once its acceptance is durable (for a run-starting command, once the
 * run's first message is).
 */
export class SessionActor {
  readonly sessionId: string;
  private readonly deps: ActorDeps;
  private readonly appender: SessionAppender;
  private readonly log: Logger;
  private readonly coalescer: UpdateCoalescer;
  /** The session's one fold: every appended event, folded once it is durable. */
  private readonly state: SessionState;
  private readonly engine: SessionEngine;
  private readonly budget: SessionBudget;
  /** Approval gates waiting for a decision in the log, by tool call id. */
  private readonly approvalWaiters = new Map<string, (step: GateStep) => void>();
  /** The worker default (`FLEET_APPROVAL_TOOLS`) as the last layer of approval rules. */
  private readonly workerApprovals: ApprovalLayer;
  /** Tool calls of assistant messages this actor appended itself: nobody can have dispatched them yet. */
  private readonly freshToolCalls = new Set<string>();
  /** The standalone compaction this actor is running (its LLM call). */
  private compaction: { abort: AbortController; done: Promise<void> } | undefined;
  private coalescedRunId: string | undefined;
  /** Where the open run sits in its trace (change 46): the context sent to the LLM and the tool runners. */
  private traceCursor: TraceCursor;
  private messageEndWaiters: Array<() => void> = [];
  private dead = false;
  private detached = false;
  /** Since when this session's appends are refused for a passing cause (one log line per outage). */
  private refusedSince: number | undefined;
  private refusedAttempts = 0;
  /** Where the log's deletion and restore stand, by stream sequence. */
  private readonly marks: LifecycleMarks;
  /** The deletion, archive or restore in progress on this actor (commands wait for it). */
  private lifecycleTask: Promise<void> | undefined;
  /** Appending archived events: they are history, not new spend. */
  private restoring = false;
  /** The session was deleted by this actor: its command may be acked though the actor is gone. */
  private removed = false;
  private readonly detachedSignal = new AbortController();
  /** Stores the fold every `snapshots.every` events (absent without snapshots). */
  private readonly snapshotWriter: SnapshotWriter | undefined;
  /** `Nats-Msg-Id` of the log's last message (the appender knows its sequence). */
  private lastMsgId: string;
  /** This session's entry in the open-work index. */
  private readonly indexEntry: SessionIndexEntry | undefined;
  /** The restore the log shows was carried out to its end by this actor (its last steps are not logged). */
  private restoreDone = false;
  /** Starts a replay session's turns (change 51). */
  private readonly replay: { continue: () => Promise<void> };
  lastUsed: number;

  private constructor(deps: ActorDeps, loaded: LoadedSession) {
    const { lastSeq, marks } = loaded;
    this.deps = deps;
    this.marks = marks;
    this.workerApprovals = workerApprovalLayer(deps.settings.approvalTools);
    this.sessionId = deps.sessionId;
    this.log = deps.logger.child({ sessionId: deps.sessionId, partition: deps.partition });
    this.lastUsed = deps.now();
    this.appender = createSessionAppender({
      publisher: deps.publisher,
      sessionId: deps.sessionId,
      partition: deps.partition,
      groups: deps.groups ?? 1,
      lastSeq,
      now: deps.now,
      validate: deps.settings.validateAppends ?? true,
      ...(deps.writeGate ? { writeGate: deps.writeGate } : {}),
      onAppended: (event, _seq, ms) => {
        deps.metrics.eventsAppended.inc({ type: event.type });
        deps.metrics.appendLatency.observe(ms / 1000);
        this.noteAppended();
        this.traceCursor = foldTraceCursor(this.traceCursor, event);
        deps.traces?.appended(event);
      },
      onRefused: (event, failure) => this.noteRefused(event, failure),
    });
    this.state = loaded.state;
    this.lastMsgId = loaded.lastMsgId;
    this.snapshotWriter = deps.snapshots
      ? createSnapshotWriter({
          sessionId: deps.sessionId,
          settings: deps.snapshots,
          snapshotEvents: loaded.snapshotEvents,
          logger: deps.logger,
        })
      : undefined;
    // A long log loaded without a snapshot gets one now.
    if (lastSeq > 0) this.snapshotWriter?.folded(this.state, this.marks, lastSeq, loaded.lastMsgId);
    this.traceCursor = loaded.traceCursor;
    deps.traces?.loaded(deps.sessionId, loaded.events);
    this.budget = createSessionBudget({
      sessionId: deps.sessionId,
      partition: deps.partition,
      state: this.state,
      tenant: deps.tenantBudget,
      now: deps.now,
      metrics: deps.metrics,
      log: this.log,
      countable: () => !this.state.deleting && !restoreOpen(this.marks),
    });
    this.budget.recordToday();
    this.coalescer = createUpdateCoalescer({
      windowMs: deps.settings.coalesceMs,
      maxDeltas: deps.settings.coalesceDeltas,
      flush: (deltas) =>
        this.appendDraft({ id: deps.newId(), body: { type: "message_update", deltas } }, this.coalescedRunId),
      // A failed flush already killed the actor (appendDraft); message_end still carries the full message.
      onError: () => undefined,
    });
    this.engine = this.createEngine();
    this.replay = createReplayDriver({
      state: this.state,
      sessionId: this.sessionId,
      busy: () => this.dead || this.detached || this.isRunning,
      submit: (command) => this.decideOwn(command),
      log: this.log,
    });
    this.indexEntry = deps.openWork
      ? createSessionIndexEntry({
          index: deps.openWork,
          partition: deps.partition,
          sessionId: deps.sessionId,
          open: () => openWorkOf(this.state, restoreOpen(this.marks) && !this.restoreDone),
          ...(deps.writeGate ? { writeGate: deps.writeGate } : {}),
          signal: this.detachedSignal.signal,
          logger: this.log,
        })
      : undefined;
  }

  /** Loads the session's fold: its snapshot and the events after it, or its whole log. */
  static async load(deps: ActorDeps): Promise<SessionActor> {
    const loaded = await loadSession({
      js: deps.js,
      jsm: deps.jsm,
      sessionId: deps.sessionId,
      partition: deps.partition,
      groups: deps.groups,
      snapshots: deps.snapshots,
      logger: deps.logger,
    });
    return new SessionActor(deps, loaded);
  }

  get isDead(): boolean {
    return this.dead;
  }

  /** A deletion, archive or restore is in flight (its command waits for it; the next owner resumes it). */
  get inLifecycle(): boolean {
    return this.lifecycleTask !== undefined;
  }

  /** A run, a compaction or a lifecycle operation is in flight on this actor. */
  get isRunning(): boolean {
    return this.engine.state.isStreaming || this.compaction !== undefined || this.lifecycleTask !== undefined;
  }

  /**
   * Finishes what the log shows as begun and not done (after a takeover, a crash or a restart), at
   * the point where pi would: an open run carries on from its cursor (aborted, if an abort was
   * accepted), an open compaction is redone or closed, and writes still pending are flushed.
   * Approvals need nothing: the resumed run's gates read their requests and decisions from the log,
   * and arm the expiry timer of a waiting request from its logged `expiresAt`.
   */
  async recover(reason = `worker ${this.deps.workerId} took over`): Promise<void> {
    if (this.dead || this.isRunning) return;
    // A deletion or restore the log shows as begun goes on in the background; commands wait for it.
    if (this.state.deleting || restoreOpen(this.marks)) {
      this.deps.lifecycle?.metrics.lifecycleResumed.inc({ op: this.state.deleting?.op ?? "restore" });
      void this.resumeLifecycle().catch((err) => this.log.warn({ err }, "lifecycle resume failed"));
      return;
    }
    if (!this.state.tree.config) return;
    const open = this.state.compaction;
    if (open && !open.runId) {
      this.log.info({ evt: "compaction_resume", compactionId: open.id }, "finishing an interrupted compaction");
      await this.announceOwner();
      this.startCompaction(open.id);
      return;
    }
    const cursor = runCursorOf(this.state);
    const point = resumePointFromCursor(cursor, reason);
    if (point) {
      this.log.info({ evt: "run_resume", runId: point.runId, at: point.at }, "resuming interrupted run");
      await this.announceOwner();
      const closing = this.deps.subAgents ? childrenToClose(cursor) : [];
      if (closing.length > 0) await this.deps.subAgents?.closeChildren(this.sessionId, closing);
      // Not awaited past the start: a resumed run may wait at an approval gate for a command.
      void this.startRun(() => this.engine.resume(point));
      return;
    }
    // Accepted, never started (the command itself may be gone: a cluster was seen losing one).
    const unstarted = unstartedRun(this.state);
    if (unstarted) {
      this.log.info({ evt: "run_start_recovered", kind: unstarted.kind }, "starting an accepted run that never began");
      await this.announceOwner();
      void this.runEffect(unstarted).catch((err) => this.log.warn({ err }, "recovered run failed to start"));
      return;
    }
    if (this.state.pendingWrites.length > 0) {
      await this.announceOwner();
      await this.engine.flushWrites().catch(() => undefined);
    }
    await this.replay.continue();
  }

  /**
   * Before an idle session is let go: stores its fold at the log's last event when it is long and
   * that event is not in its snapshot yet, so that its next load reads no event. Never rejects.
   */
  async snapshotBeforeLeaving(): Promise<void> {
    if (this.dead || this.detached || this.isRunning) return;
    await this.snapshotWriter?.flush(this.state, this.marks, this.appender.lastSeq, this.lastMsgId);
  }

  /** After a takeover loaded this session from the index: its entry goes when nothing is open. */
  settleIndex(): void {
    this.indexEntry?.settle();
  }

  /** Resolves once no run or compaction is in flight (or after `ms`). */
  async waitForIdle(ms: number): Promise<boolean> {
    if (!this.isRunning) return true;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    });
    const idle = Promise.all([this.engine.waitForIdle(), this.compaction?.done, this.lifecycleTask]).then(() => true);
    const result = await Promise.race([idle, timeout]);
    clearTimeout(timer);
    return result;
  }

  /**
   * Stops this actor without writing anything more. What is in flight is left as the log shows it:
   * tool calls are not cancelled (a call belongs to the session; the next owner waits for its
   * result), and the next owner resumes the run or the compaction from the log.
   */
  detach(): void {
    if (this.detached) return;
    this.detached = true;
    this.detachedSignal.abort();
    this.snapshotWriter?.stop();
    this.coalescer.dispose();
    this.engine.abort();
    this.compaction?.abort.abort();
  }

  // ---- commands ---------------------------------------------------------------------------------

  async handle(delivery: CommandDelivery): Promise<void> {
    this.lastUsed = this.deps.now();
    // A deletion or restore in progress finishes first: the command is decided on what it leaves.
    if (this.lifecycleTask) await this.lifecycleTask;
    if (this.dead) {
      delivery.msg.nak(500);
      return;
    }
    let read: Awaited<ReturnType<typeof readCommand>>;
    try {
      read = await readCommand(delivery, this.deps.blobs, {
        maxCommandBytes: this.deps.settings.maxCommandBytes,
        maxInputBytes: this.deps.settings.maxInputBytes ?? DEFAULT_MAX_INPUT_BYTES,
      });
    } catch (err) {
      // Its inputs cannot be read now (NATS): the command comes back later.
      this.log.warn(
        { evt: "command_inputs_unavailable", err, streamSeq: delivery.streamSeq },
        "command inputs unreadable; retrying",
      );
      delivery.msg.nak(INPUT_RETRY_MS);
      return;
    }
    const { input, parts } = read;
    const commandId = input.ok ? input.command.id : input.commandId;
    this.log.debug(
      {
        evt: "command_received",
        commandId,
        streamSeq: delivery.streamSeq,
        deliveries: delivery.msg.info.deliveryCount,
      },
      "command received",
    );
    try {
      // The log is the truth: once `agent_end` is appended the run is over for every observer,
      // even while the engine settles in memory; the command is decided after it settled.
      if (this.engine.state.isStreaming && !this.state.status.isStreaming) await this.engine.waitForIdle();
      const ctx = this.decideContext();
      // Deciding and appending happen between two of the engine's deliveries, on the fold of
      // everything appended so far; fetching a fork source or a summary happens outside.
      const decideAndAppend = () =>
        this.engine.exclusive(async (): Promise<Decision> => {
          const decision = await this.decideAsOwner(() =>
            this.state.commands.has(commandId)
              ? input.ok
                ? decideRedelivered(this.state, input.command, ctx)
                : NOTHING
              : decideCommand(this.state, this.sessionId, input, ctx),
          );
          if (decision.kind !== "decided") return decision;
          // An accepted command's parts are in `fleet_blobs` before its acceptance is in the log.
          if (parts.length > 0 && acceptsCommand(decision.events)) await keepParts(parts, this.deps.blobs);
          await this.appendDecided(decision.events);
          return decision;
        });
      let decision = await decideAndAppend();
      while (decision.kind !== "decided") {
        if (decision.kind === "needs_archive") {
          ctx.archive = await this.readArchiveHeader();
        } else if (decision.kind === "needs_lifecycle_record") {
          ctx.lastLifecycle = this.deps.lifecycle
            ? await lastLifecycleRecord(this.deps.jsm, this.sessionId, this.deps.groups)
            : null;
        } else if (decision.kind === "needs_agent_version") {
          ctx.agentVersion = await this.readAgentVersion(decision.name, decision.version);
        } else if (decision.kind === "needs_fork_source") {
          const source = await this.readTree(decision.sessionId);
          ctx.forkSource = source.config ? source : null;
        } else {
          ctx.branchSummary = await summarizeBranch({
            streamFn: this.streamFn(decision.model.provider),
            model: decision.model,
            thinkingLevel: decision.thinkingLevel,
            messages: await this.withContent(decision.messages),
            instructions: decision.instructions,
            now: this.deps.now,
          });
        }
        decision = await decideAndAppend();
      }
      for (const effect of decision.effects) await this.runEffect(effect);
    } catch (err) {
      if (err instanceof InputUnavailableError && !this.dead) {
        this.log.warn({ evt: "command_inputs_unavailable", err, commandId }, "command inputs not copied; retrying");
        delivery.msg.nak(INPUT_RETRY_MS);
        return;
      }
      this.log.error({ err, commandId }, "command failed");
      if (this.dead) return;
    }
    this.ack(delivery);
    void this.replay.continue();
  }

  /**
   * Decides a command of the actor's own (a replay's turn) as if delivered, and runs its effects;
   * nothing when its id already has an outcome in the log.
   */
  private async decideOwn(command: FleetCommand): Promise<void> {
    const ctx = this.decideContext();
    const effects = await this.engine.exclusive(async () => {
      if (this.state.commands.has(command.id) || this.dead || this.detached) return [];
      const decided = await this.decideAsOwner(() =>
        decideCommand(this.state, this.sessionId, { ok: true, command }, ctx),
      );
      if (decided.kind !== "decided") return [];
      await this.appendDecided(decided.events);
      return decided.effects;
    });
    for (const effect of effects) await this.runEffect(effect);
  }

  /**
   * `decide` on the fold, as this worker's: a decision that writes while this worker has not announced
   * itself (`owner_change`) yet is made again once the announcement is folded, so that what it
   * records of the log counts every event before its own (a tombstone's `events` are those its
   * archive holds: the log before the deletion's `command_accepted`, the announcement included).
   */
  private async decideAsOwner(decide: () => Decision): Promise<Decision> {
    const decision = decide();
    if (decision.kind !== "decided" || decision.events.length === 0) return decision;
    return (await this.announceOwner()) ? decide() : decision;
  }

  /** Appends a decision's events in order, the owner announced first and the open-work entry held. */
  private async appendDecided(events: readonly DraftEvent[]): Promise<void> {
    if (events.length > 0) await this.announceOwner();
    const append = async () => {
      for (const draft of events) await this.appendDraft(draft);
    };
    await (this.indexEntry ? this.indexEntry.hold(append) : append());
    const parent = this.state.parent;
    const refused = parent && this.deps.subAgents ? childPromptRefusal(this.sessionId, events) : undefined;
    // A child that refused its parent's task answers at once (the parent would wait out its timeout).
    if (parent && refused) await this.deps.subAgents?.childRefused(this.sessionId, parent, refused);
  }

  /**
   * The version a command names (`null`: none, or an invalid record). A KV that cannot be read is
   * `InputUnavailableError`: the command is delivered again.
   */
  private async readAgentVersion(name: string, version: number | undefined): Promise<AgentVersion | null> {
    if (!this.deps.agents) return null;
    try {
      return await this.deps.agents.get(name, version);
    } catch (err) {
      if (err instanceof AgentStoreError) {
        this.log.warn({ evt: "agent_version_invalid", agent: name, version, err }, "agent version unreadable");
        return null;
      }
      throw new InputUnavailableError(`cannot read agent ${name} (${(err as Error).message})`, { cause: err });
    }
  }

  private decideContext(): DecideContext {
    return {
      now: this.deps.now(),
      newId: this.deps.newId,
      defaults: this.deps.settings.defaults,
      isKnownTool: (name) =>
        this.deps.registry.get(name) !== undefined || (name === AGENT_TOOL_NAME && this.deps.subAgents !== undefined),
      validateToolArgs: (name, args) => {
        const tool = this.toolDefinitions().find((t) => t.name === name);
        if (!tool) return { ok: false, error: `Tool ${name} not found` };
        const valid = validateToolArguments(tool, args);
        return valid.ok ? { ok: true } : valid;
      },
      tenantBudget: this.budget.tenantBudget(),
      archiveRef: this.deps.lifecycle?.archive.ref,
    };
  }

  /**
   * Acks a handled command, unless this actor died or was detached meanwhile (its lease lost): what
   * the command began may not be in the log, and the next owner completes it from the redelivery.
   */
  private ack(delivery: CommandDelivery) {
    if ((this.dead || this.detached) && !this.removed) {
      this.log.debug(
        { evt: "command_not_acked", streamSeq: delivery.streamSeq, why: this.dead ? "dead" : "detached" },
        "command left for redelivery",
      );
      return;
    }
    delivery.msg.ack();
    this.log.debug({ evt: "command_acked", streamSeq: delivery.streamSeq }, "command acked");
    this.deps.metrics.commandLag.observe(Math.max(0, this.deps.now() - delivery.time) / 1000);
  }

  private async runEffect(effect: Effect): Promise<void> {
    switch (effect.type) {
      case "start_run": {
        this.engine.setTools(this.toolDefinitions());
        const messages = effect.kind === "prompt" ? effect.messages : undefined;
        await this.startRun(() => (messages ? this.engine.prompt(messages) : this.engine.continue()));
        return;
      }
      case "abort_run":
        this.engine.abort();
        return;
      case "approval_decided": {
        const decision = this.state.approvals.get(effect.toolCallId)?.decision;
        const waiter = this.approvalWaiters.get(effect.toolCallId);
        if (decision && waiter) waiter(stepOfDecision(decision));
        return;
      }
      case "compact":
        this.startCompaction(effect.compactionId);
        return;
      case "abort_compaction":
        this.compaction?.abort.abort();
        return;
      case "config_changed":
        this.engine.noteConfigured({ systemPrompt: effect.systemPrompt });
        return;
      case "delete_session":
      case "restore_session":
        await this.resumeLifecycle();
        return;
    }
  }

  // ---- lifecycle ----------------------------------------------------------------------------------

  /**
   * Carries out the deletion or restore the log shows as begun, from where it stands, retrying a
   * failed step with backoff until it is done or this actor is detached. A finished deletion removes
   * this actor; the next command of the session loads its empty log.
   */
  private resumeLifecycle(): Promise<void> {
    const lifecycle = this.deps.lifecycle;
    if (!lifecycle) return Promise.resolve();
    this.lifecycleTask ??= (async () => {
      const op = this.state.deleting?.op ?? "restore";
      const started = this.deps.now();
      let delay = 100;
      for (;;) {
        if (this.detached) return;
        try {
          if (this.state.deleting) await this.deleteSession(lifecycle);
          else {
            await this.restoreSession(lifecycle);
            this.restoreDone = true;
            this.indexEntry?.settle();
          }
          lifecycle.metrics.lifecycleDone.inc({ op });
          lifecycle.metrics.lifecycleDuration.observe({ op }, (this.deps.now() - started) / 1000);
          return;
        } catch (err) {
          if (this.detached) return;
          this.log.warn({ evt: "lifecycle_retry", op, err, retryInMs: delay }, "lifecycle step failed; retrying");
          await sleep(delay, this.detachedSignal.signal);
          delay = Math.min(delay * 2, 30_000);
        }
      }
    })().finally(() => {
      this.lifecycleTask = undefined;
    });
    return this.lifecycleTask;
  }

  private async deleteSession(lifecycle: LifecycleDeps): Promise<void> {
    const deletion = this.state.deleting;
    const mark = this.marks.deletion;
    if (!deletion || !mark) return;
    if (!deletion.event) {
      // A crash came between the outcome and the tombstone: append it now.
      const cmd = { type: deletion.op === "archive" ? "archive_session" : "delete_session", id: deletion.commandId };
      const draft = tombstoneDraft(this.state, this.sessionId, cmd as never, this.decideContext());
      await this.appendDraft({ ...draft, commandId: deletion.commandId });
    }
    const tombstone = this.state.deleting?.event;
    if (!tombstone || mark.tombstoneSeq === undefined) return;
    // No snapshot is made once a deletion is accepted; one still being written lands before the purge.
    this.snapshotWriter?.stop();
    await this.snapshotWriter?.idle();
    await runDeletion(
      {
        sessionId: this.sessionId,
        partition: this.deps.partition,
        commandId: deletion.commandId,
        tombstone,
        acceptSeq: mark.acceptSeq,
        tombstoneSeq: mark.tombstoneSeq,
        lastSeq: () => this.appender.lastSeq,
        signal: this.detachedSignal.signal,
      },
      lifecycle,
    );
    // Nothing of the session is left to finish: its entry goes before the actor does.
    await this.indexEntry?.forget().catch(() => undefined);
    this.removed = true;
    this.dead = true;
    this.detach();
    this.deps.onRemoved?.(this.sessionId);
  }

  private async restoreSession(lifecycle: LifecycleDeps): Promise<void> {
    const restore = this.marks.restore;
    if (!restore) return;
    const record = this.state.commands.get(restore.commandId);
    if (record?.outcome !== "accepted") return;
    await runRestore(
      {
        sessionId: this.sessionId,
        commandId: restore.commandId,
        by: restore.by,
        requestedAt: restore.requestedAt,
        archive: lifecycle.archive.ref(this.sessionId),
        appended: () => restore.appended,
        restored: () => restore.restored,
        append: async (event, msgId) => {
          this.restoring = true;
          try {
            await this.appendEvent(event, msgId);
          } finally {
            this.restoring = false;
          }
        },
        appendRestored: (events) =>
          this.appendDraft({
            id: this.deps.newId(),
            commandId: restore.commandId,
            body: { type: "session_restored", archive: lifecycle.archive.ref(this.sessionId), events },
          }),
        recordSpend: (counted) => this.budget.recordAll(counted),
        signal: this.detachedSignal.signal,
      },
      lifecycle,
    );
  }

  /** The session's archive header (`null`: no archive), for a restore's decision. */
  private async readArchiveHeader(): Promise<DecideContext["archive"]> {
    const lifecycle = this.deps.lifecycle;
    if (!lifecycle) return null;
    const text = await lifecycle.archive.read(this.sessionId);
    if (text === null) return null;
    const parsed = parseArchive(text);
    if (!parsed.ok) {
      this.log.warn({ evt: "archive_unreadable", error: parsed.error }, "the session's archive is unreadable");
      return null;
    }
    return { header: parsed.value.header, ref: lifecycle.archive.ref(this.sessionId) };
  }

  // ---- runs -------------------------------------------------------------------------------------

  /** Starts a run and resolves once its first message is durable (or the run settled). */
  private async startRun(start: () => Promise<RunResult>): Promise<void> {
    const firstMessage = new Promise<void>((resolve) => this.messageEndWaiters.push(resolve));
    this.deps.metrics.activeRuns.inc();
    const run = start()
      .then(async (result) => {
        if (result.status === "emit_failed" && !this.detached) this.kill(`write failed: ${result.error.message}`);
        await this.coalescer.drain().catch(() => undefined);
      })
      .catch((err) => this.kill(`run failed: ${(err as Error).message}`))
      .finally(() => {
        this.deps.metrics.activeRuns.dec();
        this.lastUsed = this.deps.now();
        this.freshToolCalls.clear();
        for (const w of this.messageEndWaiters.splice(0)) w();
      })
      .then(() => this.replay.continue());
    await Promise.race([firstMessage, run]);
  }

  private createEngine(): SessionEngine {
    const deps = this.deps;
    const local = composeHooks([
      // pi coding-agent's conversion (summaries and custom messages become user text); plugins may replace it.
      { convertToLlm },
      ...deps.pluginHooks,
      deps.remoteHooks.forSession(this.sessionId),
      { beforeToolCall: (c, signal) => this.approvalGate(c.toolCall.id, c.toolCall.name, c.args, signal) },
    ]);
    const servers = deps.hookServers;
    const port = servers ? this.hookSessionPort() : undefined;
    const hooks = servers && port ? withHookServers(local, servers, port) : local;
    const llm = (provider: string) => {
      const inner = this.streamFn(provider);
      return servers && port ? withPayloadHook(inner, servers, port, deps.now) : inner;
    };
    return createSessionEngine({
      sessionId: this.sessionId,
      session: this.state,
      tools: this.toolDefinitions(),
      hooks,
      contextWindow: (model) => this.modelInfo(model).contextWindow,
      ports: {
        now: deps.now,
        newId: deps.newId,
        emit: (event) => this.emit(event),
        streamFn: guardBudget(
          (context, options, signal) =>
            timeToFirstDelta(llm(options.model.provider)(context, this.traced(options), signal), deps.now, (ms) =>
              deps.metrics.timeToFirstToken.observe(ms / 1000),
            ),
          this.budget.guard,
          deps.now,
          (model) => this.modelInfo(model).price,
        ),
        executeTool: (call, signal, onUpdate) => this.executeTool(call, signal, onUpdate),
      },
    });
  }

  /** What the named hook servers read and write of this session: its fold, `hook_decision` appends, blobs. */
  private hookSessionPort(): HookSessionPort {
    return {
      sessionId: this.sessionId,
      fold: () => this.state,
      record: async (body) => {
        await this.coalescer.drain();
        await this.appendDraft({ id: this.deps.newId(), body }, this.state.status.runId);
      },
      blobs: this.deps.blobs,
    };
  }

  /**
   * Runs a call on the tool runners. The run's abort cancels it; a detach (lease lost, eviction,
   * shutdown) only stops waiting: the call goes on, and its result is the next owner's.
   */
  private async executeTool(
    call: { toolCallId: string; toolName: string; args: unknown },
    signal: AbortSignal | undefined,
    onUpdate: (partial: unknown) => void,
  ) {
    const deps = this.deps;
    const recorded = recordedToolResult(this.state, call);
    if (recorded) return recorded;
    if (call.toolName === AGENT_TOOL_NAME && deps.subAgents)
      return this.executeChildCall(call, signal, onUpdate, deps.subAgents);
    const started = deps.now();
    const result = await this.cancellable(signal, (cancel) =>
      deps.dispatcher.execute(
        {
          sessionId: this.sessionId,
          runId: this.engine.state.runId ?? "",
          toolCallId: call.toolCallId,
          toolName: call.toolName,
          args: call.args,
          timeoutMs: deps.registry.get(call.toolName)?.timeoutMs ?? deps.settings.toolTimeoutMs,
          fresh: this.freshToolCalls.delete(call.toolCallId),
          ...this.toolTrace(call.toolCallId),
        },
        cancel,
        onUpdate,
        this.detachedSignal.signal,
      ),
    );
    deps.metrics.toolLatency.observe({ tool: call.toolName }, (deps.now() - started) / 1000);
    return result;
  }

  /**
   * Runs a call with a signal the run's abort aborts, unless this actor was detached meanwhile (a
   * detach only stops waiting: the call is the next owner's). Throws when detached.
   */
  private async cancellable<T>(signal: AbortSignal | undefined, run: (cancel: AbortSignal) => Promise<T>): Promise<T> {
    const cancel = new AbortController();
    const onAbort = () => {
      if (!this.detached) cancel.abort();
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted) onAbort();
    try {
      const result = await run(cancel.signal);
      if (this.detached) throw new Error("actor detached");
      return result;
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  }

  /**
   * An `agent` call (change 57): decided from the fold (`decideChildCall`: a refusal is its error
   * result), then its child started and awaited. The child's id derives from the call, so a new owner
   * resuming the run awaits the same child, and finds its stored answer.
   */
  private async executeChildCall(
    call: { toolCallId: string; toolName: string; args: unknown },
    signal: AbortSignal | undefined,
    onUpdate: (partial: unknown) => void,
    port: SubAgentPort,
  ) {
    const decision = decideChildCall({
      parentSessionId: this.sessionId,
      parentLink: this.state.parent,
      runId: this.engine.state.runId ?? "",
      toolCallId: call.toolCallId,
      args: call.args,
      ordinal: agentCallOrdinal(this.state.tree.entries, call.toolCallId),
      limits: port.settings,
    });
    if (decision.kind === "refuse") return { content: [{ type: "text" as const, text: decision.text }], isError: true };
    const fresh = this.freshToolCalls.delete(call.toolCallId);
    return this.cancellable(signal, (cancel) =>
      port.run(this.sessionId, call.toolCallId, decision, cancel, onUpdate, this.detachedSignal.signal, fresh),
    );
  }

  /** `options` with the trace context of the LLM call about to be sent (its `chat` span). */
  private traced(options: StreamOptions): StreamOptions {
    const traceparent = chatTraceparent(this.traceCursor);
    const tracestate = this.traceCursor.run?.root.tracestate;
    return traceparent ? { ...options, traceparent, ...(tracestate ? { tracestate } : {}) } : options;
  }

  /** The trace context of a tool call of the open run (its `execute_tool` span). */
  private toolTrace(toolCallId: string): { traceparent?: string; tracestate?: string } {
    const root = this.traceCursor.run?.root;
    const traceparent = root && toolTraceparent(this.traceCursor, root.runId, toolCallId);
    if (!traceparent) return {};
    return { traceparent, ...(root.tracestate ? { tracestate: root.tracestate } : {}) };
  }

  private modelInfo(model: ModelRef): ModelInfo {
    return this.deps.modelInfo?.(model) ?? getModelInfo(model.modelId);
  }

  /** The LLM port for `provider`; content by reference in the context is resolved first. */
  private streamFn(provider: string): StreamFn {
    return resolvingBlobs(streamFnFor(this.deps.providers, provider, this.deps.now), this.deps.blobs, this.deps.now);
  }

  /**
   * `value` with its content by reference resolved, for a summary's prompt; when an object cannot
   * be read the summary is made from the previews (and a warning logged).
   */
  private async withContent<T>(value: T): Promise<T> {
    try {
      return await resolveBlobBlocks(value, this.deps.blobs);
    } catch (err) {
      this.log.warn({ evt: "content_unresolved", err }, "summarizing from previews: content by reference unreadable");
      return value;
    }
  }

  private toolDefinitions(): ToolDefinition[] {
    const tools: ToolDefinition[] = this.deps.registry.all().map((t) => ({
      name: t.name,
      description: t.description,
      parameters: t.parameters,
      executionMode: t.executionMode,
    }));
    const sub = this.deps.subAgents;
    if (sub && !tools.some((t) => t.name === AGENT_TOOL_NAME)) tools.push(sub.tool());
    return tools;
  }

  /**
   * The approval gate of each call (`decideApprovalGate`): the rules in force (the session's, the
   * tenant's, the worker default's, first match wins) let it run, refuse it, or make it wait for a
   * decision read from the log: a decision already logged (a resumed run) is used at once, a request
   * already logged is not made again, and one with `expiresAt` expires by a timer armed from the
   * log (`decideApprovalExpiry`), so a new owner arms it again after a crash.
   */
  private async approvalGate(
    toolCallId: string,
    toolName: string,
    args: unknown,
    signal: AbortSignal | undefined,
  ): Promise<BeforeToolCallResult | undefined> {
    const state = this.state;
    const tenant = this.deps.tenantApprovalRules?.rules() ?? [];
    // The common case (no rule anywhere, no request logged) allocates nothing.
    if (
      state.approvalRules.length === 0 &&
      state.agentApprovalRules.length === 0 &&
      tenant.length === 0 &&
      !this.deps.settings.approvalTools.has(toolName) &&
      !state.approvals.has(toolCallId)
    )
      return undefined;
    const layers: ApprovalLayer[] = [
      { scope: "session", rules: state.approvalRules },
      { scope: "agent_version", rules: state.agentApprovalRules },
      { scope: "tenant", rules: tenant },
      this.workerApprovals,
    ];
    const first = decideApprovalGate(state, { toolCallId, toolName, args }, layers, this.deps.now(), this.deps.newId);
    const step =
      first.kind === "request" || first.kind === "wait" ? await this.awaitApproval(first, toolCallId, signal) : first;
    if (step.kind === "refuse") return { block: true, reason: step.reason };
    if (step.kind === "run" && step.args !== undefined) return { args: step.args };
    return undefined;
  }

  /** Waits at the gate: appends the request (unless logged), arms its expiry, resolves on a decision. */
  private async awaitApproval(
    step: Extract<GateStep, { kind: "request" | "wait" }>,
    toolCallId: string,
    signal: AbortSignal | undefined,
  ): Promise<GateStep> {
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    try {
      return await new Promise<GateStep>((resolve) => {
        this.approvalWaiters.set(toolCallId, resolve);
        onAbort = () => resolve({ kind: "refuse", reason: APPROVAL_TEXT.aborted });
        if (signal?.aborted) return onAbort();
        signal?.addEventListener("abort", onAbort, { once: true });
        const arm = () => {
          if (step.expiresAt === undefined) return;
          const delay = Math.max(0, step.expiresAt - this.deps.now());
          timer = setTimeout(() => void this.expireApproval(toolCallId), delay);
        };
        if (step.kind === "wait") return arm();
        void this.coalescer
          .drain()
          .then(() => this.appendDraft(step.request, this.engine.state.runId))
          .then(arm)
          .catch(() => resolve({ kind: "refuse", reason: APPROVAL_TEXT.unrecorded }));
      });
    } finally {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener("abort", onAbort);
      this.approvalWaiters.delete(toolCallId);
    }
  }

  /**
   * The expiry timer of a waiting request fired: decided and appended between two of the engine's
   * deliveries, like a command, so a decision that came first wins and the log holds exactly one.
   */
  private async expireApproval(toolCallId: string): Promise<void> {
    if (this.detached || this.dead) return;
    try {
      const decision = await this.engine.exclusive(async () => {
        const d = decideApprovalExpiry(this.state, toolCallId, this.deps.now(), this.deps.newId);
        if (d.kind === "decided") for (const draft of d.events) await this.appendDraft(draft, this.engine.state.runId);
        return d;
      });
      if (decision.kind === "decided") for (const effect of decision.effects) await this.runEffect(effect);
    } catch (err) {
      if (!this.detached) this.log.warn({ err, toolCallId }, "approval expiry could not be recorded");
    }
  }

  // ---- compaction -------------------------------------------------------------------------------

  /**
   * Carries out the standalone compaction whose `compaction_start` (id `compactionId`) is in the
   * log: summarise the branch, append the `compaction` entry and `compaction_end`, then flush the
   * writes it deferred. A compaction whose entry is already logged only gets its `compaction_end`;
   * one an accepted `abort` cancelled ends with `compaction_end {aborted: true}`.
   */
  private startCompaction(compactionId: string): void {
    const abort = new AbortController();
    const done = this.compact(compactionId, abort.signal)
      .catch((err) => {
        if (!this.detached) this.log.warn({ err, compactionId }, "compaction failed to record");
      })
      .finally(() => {
        if (this.compaction?.abort === abort) this.compaction = undefined;
        this.lastUsed = this.deps.now();
      });
    this.compaction = { abort, done };
  }

  private async compact(compactionId: string, signal: AbortSignal) {
    const open = this.state.compaction;
    if (!open || open.id !== compactionId) return;
    const end = (fields: { aborted: boolean; errorMessage?: string }) =>
      this.appendDraft({
        id: this.deps.newId(),
        body: { type: "compaction_end", reason: open.reason, willRetry: false, ...fields },
      });
    if (open.entryId === undefined && !open.abortRequested) {
      const branch = getBranch(this.state.tree, this.state.tree.leafId);
      const settings = compactionSettingsOf(this.state.tree.config);
      const plan = branch.ok ? prepareCompaction(branch.entries, settings.keepRecentTokens) : branch;
      if (!plan.ok) {
        await end({ aborted: false, errorMessage: `Compaction failed: ${plan.error}` });
        return this.flushDeferred();
      }
      const engine = this.engine.state;
      const provider = this.streamFn(engine.model.provider);
      const summary = await summarizeForCompaction({
        streamFn: (context, options, llmSignal) => provider(context, this.traced(options), llmSignal),
        model: engine.model,
        thinkingLevel: engine.thinkingLevel,
        plan: await this.withContent(plan),
        instructions: open.instructions,
        reserveTokens: settings.reserveTokens,
        signal,
        now: this.deps.now,
      });
      if (this.detached) return;
      if (signal.aborted || this.state.compaction?.abortRequested) {
        await end({ aborted: true });
        return this.flushDeferred();
      }
      if (!summary.ok) {
        await end({ aborted: false, errorMessage: `Compaction failed: ${summary.error}` });
        return this.flushDeferred();
      }
      await this.appendDraft({
        id: this.deps.newId(),
        body: {
          type: "compaction",
          summary: summary.summary,
          firstKeptEntryId: plan.firstKeptEntryId,
          tokensBefore: plan.tokensBefore,
          details: { readFiles: plan.readFiles, modifiedFiles: plan.modifiedFiles },
          usage: summary.usage,
        },
      });
      await end({ aborted: false });
    } else {
      await end({ aborted: open.entryId === undefined });
    }
    return this.flushDeferred();
  }

  private async flushDeferred() {
    if (this.state.pendingWrites.length > 0 && !this.engine.state.isStreaming) await this.engine.flushWrites();
  }

  // ---- the write path ---------------------------------------------------------------------------

  /** The engine's port: deltas are coalesced; every other event is appended after them. */
  private async emit(event: EngineEvent): Promise<void> {
    if (this.detached) throw new Error("actor detached");
    if (event.body.type === "message_update") {
      this.coalescedRunId = event.runId;
      this.coalescer.push(event.body.deltas);
      return;
    }
    await this.coalescer.drain();
    const body = event.body;
    const parent = this.state.parent;
    const sub = parent ? this.deps.subAgents : undefined;
    // A child's answer is stored for its parent before its `agent_end`: a crash between the two
    // resumes the run, which ends again and stores the same answer (same msgID).
    if (sub && parent && body.type === "agent_end") {
      const runId = event.runId ?? event.id;
      await sub.childFinished(this.sessionId, parent, { runId, messages: body.messages, spent: this.state.spend.run });
    }
    const stamped = this.stamp({ id: event.id, body }, event.runId);
    await this.appendEvent(stamped);
    if (sub && parent) sub.childEvent(this.sessionId, parent, stamped);
    if (body.type === "message_end" && body.message.role === "assistant") {
      for (const c of body.message.content) if (c.type === "toolCall") this.freshToolCalls.add(c.id);
    }
  }

  /** Appends `owner_change` unless the fold's owner is this worker at its epoch; whether it did. */
  private async announceOwner(): Promise<boolean> {
    const owner = this.state.owner;
    if (owner?.workerId === this.deps.workerId && owner.epoch === this.deps.epoch) return false;
    const { workerId, partition, epoch } = this.deps;
    await this.appendDraft({ id: this.deps.newId(), body: { type: "owner_change", workerId, partition, epoch } });
    return true;
  }

  private stamp(draft: DraftEvent, runId?: string): FleetEvent {
    return stampDraft(this.state, draft, {
      sessionId: this.sessionId,
      producer: this.deps.workerId,
      now: this.deps.now(),
      runId,
    });
  }

  private appendDraft(draft: DraftEvent, runId?: string): Promise<void> {
    return this.appendEvent(this.stamp(draft, runId));
  }

  /**
   * Appends one event and folds it into the session's state. A refusal for a passing cause (a full
   * store, an election) is retried by the appender while the lease is held: the call waits, and the
   * session keeps its work. Throws when the append failed; a fenced writer (the lease lost) kills the
   * actor, and the partition's next holder resumes the session from the log. Every append goes
   * through here, and the first one of this owner is its `owner_change`.
   */
  private async appendEvent(event: FleetEvent, restoredMsgId?: string): Promise<void> {
    if (this.detached) throw new Error("actor detached");
    // The open-work entry is durable before an event that may open work is (change 41).
    if (this.indexEntry) return this.indexEntry.around(event, () => this.appendIndexed(event, restoredMsgId));
    return this.appendIndexed(event, restoredMsgId);
  }

  private async appendIndexed(event: FleetEvent, restoredMsgId?: string): Promise<void> {
    // A restored event is history: no ownership change goes between two of them.
    if (event.type !== "owner_change" && restoredMsgId === undefined) await this.announceOwner();
    const out = await this.appender.append(event, restoredMsgId);
    if (!out.ok) {
      if (out.kind === "fenced") {
        this.deps.metrics.fencedSessions.inc();
        this.log.warn({ evt: "fenced", error: out.error }, "fenced by another writer; dropping the session");
        this.kill("fenced");
      } else if (out.kind === "failed") {
        this.kill(`append failed: ${out.error}`);
      }
      throw new Error(`append of ${event.type} failed (${out.kind}): ${out.error}`);
    }
    foldSessionEvents([out.event], this.state);
    markLifecycle(this.marks, out.event, out.seq);
    this.lastMsgId = restoredMsgId ?? out.event.meta.id;
    this.snapshotWriter?.folded(this.state, this.marks, out.seq, this.lastMsgId);
    if (!this.restoring) this.budget.afterFold(out.event);
    if (out.event.type === "message_end") for (const w of this.messageEndWaiters.splice(0)) w();
  }

  /**
   * An append was refused for a passing cause and is being retried (the session keeps its work):
   * counted each time, logged once per outage.
   */
  private noteRefused(event: FleetEvent, failure: PublishFailure) {
    const cause = publishFailureCause(failure.code);
    this.deps.metrics.appendsRefused.inc({ cause });
    this.refusedAttempts++;
    if (this.refusedSince !== undefined) return;
    this.refusedSince = this.deps.now();
    this.log.warn(
      { evt: "append_refused", cause, code: failure.code, error: failure.error, eventType: event.type },
      cause === "storage_full"
        ? "the event store is full: this session's writes wait for space, retried while the lease is held"
        : "appends are refused: retried while the lease is held",
    );
  }

  private noteAppended() {
    if (this.refusedSince === undefined) return;
    this.log.info(
      { evt: "append_resumed", waitedMs: this.deps.now() - this.refusedSince, refused: this.refusedAttempts },
      "appends land again",
    );
    this.refusedSince = undefined;
    this.refusedAttempts = 0;
  }

  private kill(why: string) {
    if (this.dead) return;
    this.dead = true;
    this.detach();
    this.deps.onDead(this.sessionId, why);
  }

  private async readTree(sessionId: string): Promise<SessionTree> {
    const partition = partitionOf(sessionId, this.deps.partitions);
    if (this.deps.snapshots) {
      const { js, jsm, snapshots, logger, groups } = this.deps;
      return (await loadSession({ js, jsm, sessionId, partition, groups, snapshots, logger })).state.tree;
    }
    const events: FleetEvent[] = [];
    const subject = subjects.event(partition, sessionId);
    const stream = eventStreamOfPartition(partition, this.deps.groups ?? 1);
    for await (const rec of readSubject(this.deps.js, this.deps.jsm, stream, subject)) {
      const decoded = decodeEvent(rec.data);
      if (decoded.ok) events.push(decoded.value);
    }
    return foldSessionTreeEvents(events);
  }
}
