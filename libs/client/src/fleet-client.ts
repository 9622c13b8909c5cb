// FleetClient: drive sessions (commands) and read them (events, live state, replay, store queries).
// The class is the shell over one connection; each concern lives in its own file.
import {
  type ApprovalRule,
  type BlobRef,
  type BudgetLimits,
  type FleetCommand,
  type LifecycleRecord,
  type PendingApproval,
  partitionOf,
  type ReplayRequest,
  type SessionDiff,
  type TraceSpan,
} from "@fleet/protocol";
import { resolveBlobBlocks } from "@fleet/runtime";
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { AgentsApi } from "./agents.js";
import { sessionApprovalRulesOf, setTenantApprovalRulesOf, tenantApprovalRulesOf } from "./approval-rules.js";
import { type ChangeBatch, type ChangeFeed, createChangeFeed, iterateChanges } from "./change-feed.js";
import { type ConnectionOptions, connectClientNats, type FleetClientOptions, openClient } from "./client-connect.js";
import {
  type ClientContext,
  eventStreamOf,
  eventSubjectOf,
  lastEventSeq,
  lifecycleStreamOf,
  streamUnavailable,
} from "./client-context.js";
import type {
  CommandBody,
  CommandOptions,
  CommandOutcome,
  LifecycleOptions,
  OutcomeRecord,
} from "./command-options.js";
import { FleetError } from "./errors.js";
import { type HistoryRange, type HistoryRecord, readHistory } from "./history-read.js";
import { newId } from "./ids.js";
import { type LifecycleCommandType, lifecycleRecordOf, runLifecycleCommand } from "./lifecycle-command.js";
import type { LiveSession } from "./live-session.js";
import { openLiveState } from "./live-state.js";
import { describeError, isPermissionDenied } from "./nats-failures.js";
import type { EventsOptions, ReplayResult, SessionEventItem, SessionEventRecord } from "./read-options.js";
import { replaySession } from "./replay-session.js";
import { ScheduleClient } from "./schedules.js";
import { approvalsWithDescendants, type SessionChild, sessionChildren } from "./session-children.js";
import { SessionCommands } from "./session-commands.js";
import { iterateSessionEvents, startSeqOf } from "./session-events.js";
import { readSessionLog } from "./session-log.js";
import {
  diffSessionLogs,
  followReplay,
  type ReplayProgress,
  type ReplayRow,
  replayProgressOf,
  replayRowOf,
} from "./session-replay.js";
import { readSessionTrace } from "./session-trace.js";
import { type StoreResult, storeRequest } from "./store-request.js";
import { rejectionOf, submitCommand } from "./submit-command.js";
import type { TenantBudgetReport } from "./tenant-budget.js";
import { setTenantLimitsOf, tenantBudgetOf } from "./tenant-limits.js";

/** The change feed's subscription was refused: the login may not follow the store's notices. */
const refusedFeed = (err: Error): Error =>
  new FleetError(
    "unavailable",
    isPermissionDenied(err) ? "permission" : "nats",
    `cannot follow the change feed: ${describeError(err)}`,
    { cause: err },
  );

/** The change feed's window: at most one frame per 250 ms (the gateway's too). */
export const DEFAULT_CHANGE_WINDOW_MS = 250;
const MAX_CHANGE_WINDOW_MS = 60_000;

/**
 * A connection to a Fleet deployment.
 * Contract: every command method publishes one command to `fleet.cmd.<p>.<sessionId>` with
 * `Nats-Msg-Id` = its id, then resolves on the matching `command_accepted`, or rejects with a
 * `CommandRejectedError` (`code`, `reason`) on `command_rejected`, or with a `FleetError` of kind
 * `timeout`. The outcome is read from the event subject starting at the sequence after the last
 * event that existed before the publish, so it cannot be missed.
 */
export class FleetClient extends SessionCommands {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  /** P, the partition count. */
  readonly partitions: number;
  /** The tenant's schedules (PROTOCOL "Schedules"). */
  readonly schedules: ScheduleClient;
  /** K, the number of event streams (stream groups). */
  readonly groups: number;
  /** The tenant's agents (KV `fleet_agents`): create, update, get, list, show. */
  readonly agents: AgentsApi;
  readonly #ctx: ClientContext;
  readonly #changeFeeds = new Map<number, ChangeFeed>();
  readonly #commandTimeoutMs: number;
  readonly #requestTimeoutMs: number;

  private constructor(ctx: ClientContext, opts: { commandTimeoutMs: number; requestTimeoutMs: number }) {
    super();
    this.#ctx = ctx;
    this.nc = ctx.nc;
    this.js = ctx.js;
    this.jsm = ctx.jsm;
    this.partitions = ctx.partitions;
    this.schedules = new ScheduleClient(ctx.js, ctx.jsm);
    this.groups = ctx.groups;
    this.agents = new AgentsApi(ctx.nc);
    this.#commandTimeoutMs = opts.commandTimeoutMs;
    this.#requestTimeoutMs = opts.requestTimeoutMs;
  }

  /**
   * Connects and reads P from KV `fleet_config`.
   * Errors: `FleetError` kind `unavailable` when the server cannot be reached, JetStream is off, or
   * the deployment has not been set up (no `fleet_config.partitions`).
   */
  static async connect(opts: FleetClientOptions = {}): Promise<FleetClient> {
    const nc = await connectClientNats(opts);
    try {
      return await FleetClient.fromConnection(nc, opts);
    } catch (err) {
      await nc.close().catch(() => undefined);
      throw err;
    }
  }

  /**
   * A client over a connection the caller opened (for example with credentials of its own); reads
   * P from KV `fleet_config` unless given. `close()` closes that connection. Errors as `connect`.
   */
  static async fromConnection(nc: NatsConnection, opts: ConnectionOptions = {}): Promise<FleetClient> {
    const { ctx, ...timeouts } = await openClient(nc, opts);
    return new FleetClient(ctx, timeouts);
  }

  /** Closes the connection; running `events()` iterators end. */
  async close(): Promise<void> {
    if (!this.nc.isClosed()) await this.nc.close();
  }

  partitionOf(sessionId: string): number {
    return partitionOf(sessionId, this.partitions);
  }

  /** The session's event subject, `fleet.evt.<p>.<sessionId>`. */
  eventSubject(sessionId: string): string {
    return eventSubjectOf(this.#ctx, sessionId);
  }

  /** The stream holding the session's events: `FLEET_EVENTS` with K = 1, `FLEET_EVENTS_G<g>` otherwise. */
  eventStream(sessionId: string): string {
    return eventStreamOf(this.#ctx, sessionId);
  }

  /** The stream holding every session's lifecycle records (`fleet.evt.lifecycle.<sessionId>`). */
  lifecycleStream(): string {
    return lifecycleStreamOf(this.#ctx);
  }

  /** Stream sequence of the session's last event, 0 when it has none. */
  lastSeq(sessionId: string): Promise<number> {
    return lastEventSeq(this.#ctx, sessionId);
  }

  // ---------------------------------------------------------------------------------------------
  // Commands (the typed methods are SessionCommands')

  /** Sends any command to a session (the generic form of the typed command methods). */
  async send(sessionId: string, body: CommandBody, opts: CommandOptions = {}): Promise<CommandOutcome> {
    const outcome = await this.outcomeOf(sessionId, body, opts);
    const rejection = rejectionOf(sessionId, outcome);
    if (rejection) throw rejection;
    return { sessionId, commandId: outcome.event.commandId, commandType: body.type, seq: outcome.seq };
  }

  /**
   * Sends any command and resolves with its outcome event, `command_accepted` or `command_rejected`
   * (a rejection is data here, not an error). Same errors as `send` otherwise: `invalid_input`
   * before publishing, `unavailable` (code `storage_full` when JetStream refused the command because
   * its storage is full: nothing was stored), and `timeout` when no outcome arrived in time.
   * Re-sending a command id within the stream's dedup window finds the first outcome.
   */
  async outcomeOf(sessionId: string, body: CommandBody, opts: CommandOptions = {}): Promise<OutcomeRecord> {
    const trace = {
      ...(opts.traceparent !== undefined ? { traceparent: opts.traceparent } : {}),
      ...(opts.tracestate !== undefined ? { tracestate: opts.tracestate } : {}),
    };
    const command = { ...body, ...trace, id: opts.commandId ?? newId(), sessionId, ts: Date.now() } as FleetCommand;
    return submitCommand(this.#ctx, command, opts.timeoutMs ?? this.#commandTimeoutMs);
  }

  // ---------------------------------------------------------------------------------------------
  // Session lifecycle

  /**
   * Deletes a session: its events, projection, blobs, workspace, tool results and budget records
   * (its spend stays counted in the tenant's ledger). Resolves with the lifecycle record once the
   * deletion is done. Rejects with `CommandRejectedError` code `busy` while a run is active (abort it
   * first), `not_found` for an unknown session, `conflict` while it is being deleted; `timeout` when
   * it did not finish in time (it goes on; `lifecycleRecord` tells when it is done).
   */
  deleteSession(sessionId: string, opts: LifecycleOptions = {}): Promise<LifecycleRecord> {
    return this.#lifecycle(sessionId, "delete_session", opts);
  }

  /** Writes a session's whole log to the archive, then deletes it as `deleteSession` does. */
  archiveSession(sessionId: string, opts: LifecycleOptions = {}): Promise<LifecycleRecord> {
    return this.#lifecycle(sessionId, "archive_session", opts);
  }

  /**
   * Brings an archived session back with the same id and history (every event on its subject), and
   * resolves once all of it is back. Rejects `not_found` without an archive, `conflict` when the
   * session exists.
   */
  restoreSession(sessionId: string, opts: LifecycleOptions = {}): Promise<LifecycleRecord> {
    return this.#lifecycle(sessionId, "restore_session", opts);
  }

  /** The session's last lifecycle record (`fleet.evt.lifecycle.<sessionId>`), or null. */
  lifecycleRecord(sessionId: string): Promise<LifecycleRecord | null> {
    return lifecycleRecordOf(this.#ctx, sessionId);
  }

  #lifecycle(sessionId: string, type: LifecycleCommandType, opts: LifecycleOptions): Promise<LifecycleRecord> {
    return runLifecycleCommand(this.#ctx, sessionId, type, opts, opts.timeoutMs ?? this.#commandTimeoutMs);
  }

  // ---------------------------------------------------------------------------------------------
  // Reading the log

  /**
   * The session's events in stream order, live: the iterator waits for new events and ends only
   * when `signal` aborts, the caller stops, or the client closes.
   * Contract: survives reconnects and server restarts, resuming after the last delivered sequence:
   * no gap, no duplicate. `from: "new"` is fixed when `events()` is called, not when iteration starts.
   */
  events(sessionId: string, opts: EventsOptions = {}): AsyncIterable<SessionEventItem> {
    const start = startSeqOf(this.#ctx, sessionId, opts);
    return iterateSessionEvents(this.#ctx, sessionId, start, opts, (seq, event) => ({ seq, event }));
  }

  /**
   * The tenant's change feed (PROTOCOL "Change feed"): from now on, at most one frame per
   * `windowMs` (default 250) naming the sessions whose changes the store's indexes took in (or that
   * were deleted, archived or restored), `approvals: true` when an approval may have been asked
   * for, answered or dropped, and `all: true` when anything may differ (a store took a stream group
   * up or switched to rebuilt indexes, this connection was down, or more than 1,000 sessions
   * changed): reload from the indexes (`listSessions`, `listApprovals`) on a frame that concerns
   * you, never on a timer. A reader that falls behind gets the frames it missed merged into one.
   * Live only; ends when `signal` aborts, the caller stops, or the client closes. Needs a role that
   * may subscribe to `fleet.store.applied.*` (reader, operator, gateway): a login that may not
   * ends the iteration with a `FleetError` (`unavailable`, code `permission`).
   */
  changes(opts: { windowMs?: number; signal?: AbortSignal } = {}): AsyncIterable<ChangeBatch> {
    const windowMs = opts.windowMs ?? DEFAULT_CHANGE_WINDOW_MS;
    if (!Number.isInteger(windowMs) || windowMs < 1 || windowMs > MAX_CHANGE_WINDOW_MS) {
      throw new FleetError("invalid_input", "invalid", `windowMs must be an integer from 1 to ${MAX_CHANGE_WINDOW_MS}`);
    }
    // One feed per client and window: every iterator of it shares its two subscriptions.
    let feed = this.#changeFeeds.get(windowMs);
    if (!feed) {
      feed = createChangeFeed(this.nc, { windowMs });
      this.#changeFeeds.set(windowMs, feed);
    }
    return iterateChanges(feed, this.nc, refusedFeed, opts.signal);
  }

  /**
   * `events()` with each event's stored bytes, for a reader that passes the JSON on as it is (the
   * gateway frames it without serialising the event again). Same contract as `events()`.
   */
  eventRecords(sessionId: string, opts: EventsOptions = {}): AsyncIterable<SessionEventRecord> {
    const start = startSeqOf(this.#ctx, sessionId, opts);
    return iterateSessionEvents(this.#ctx, sessionId, start, opts, (seq, event, data) => ({ seq, event, data }));
  }

  /**
   * The session's stored events with `fromSeq <= seq <= toSeq`, as stored (undecoded), in order.
   * A short range is read by direct gets, a long one with one bounded ordered read (`readHistory`):
   * what a reader needs before it switches to the live path. Rejects `unavailable` when the log
   * cannot be read.
   */
  async *history(sessionId: string, range: HistoryRange): AsyncGenerator<HistoryRecord> {
    try {
      yield* readHistory(this.#ctx, eventStreamOf(this.#ctx, sessionId), eventSubjectOf(this.#ctx, sessionId), range);
    } catch (err) {
      throw streamUnavailable(err);
    }
  }

  /**
   * The session folded live (agent state with `foldAgentState`, tree with `foldSessionTree`).
   * Resolves once the fold has caught up with the last event that existed at the call.
   */
  state(sessionId: string, opts: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<LiveSession> {
    return openLiveState(this.#ctx, sessionId, opts);
  }

  /**
   * The agent state and session tree as they stood at stream sequence `toSeq` (default: now):
   * reads the session's subject up to `toSeq` and folds it. `view.seq` is the last sequence applied.
   * `from`: an earlier replay of the same session (never changed by this call); only the events after
   * `from.seq` are read and folded onto it, and `events` / `invalid` count only those.
   */
  replay(sessionId: string, opts: { toSeq?: number; from?: ReplayResult } = {}): Promise<ReplayResult> {
    return replaySession(this.#ctx, sessionId, opts);
  }

  /**
   * The child sessions the session's `agent` calls started (sub-agents, change 57), in call order,
   * each with its status and spend; `depth` > 1 adds their own children. Reads the logs.
   */
  children(sessionId: string, opts: { depth?: number } = {}): Promise<SessionChild[]> {
    return sessionChildren((id) => replaySession(this.#ctx, id, {}), sessionId, opts.depth ?? 1);
  }

  /**
   * The pending approvals of a session and of every descendant it started (sub-agents): an
   * approval asked inside a child is answered with `approve_tool_call` on the item's `sessionId`.
   */
  async approvalsWithDescendants(sessionId: string): Promise<PendingApproval[]> {
    return approvalsWithDescendants(
      async (id) => (await this.listApprovals({ sessionId: id })).approvals,
      (id) => replaySession(this.#ctx, id, {}),
      sessionId,
    );
  }

  /**
   * Waits until the replay session `sessionId` (made by `replayWith`) has run all its turns, or one
   * was refused; resolves with its progress. Errors: `invalid_input` (no replay), `timeout`.
   */
  async waitForReplay(sessionId: string, opts: { timeoutMs?: number } = {}): Promise<ReplayProgress> {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), opts.timeoutMs ?? 300_000);
    try {
      return await followReplay(this.events(sessionId, { from: "start", signal: abort.signal }), abort.signal);
    } finally {
      clearTimeout(timer);
      abort.abort();
    }
  }

  /** Where a replay session stands now (`replayOf` undefined: it is no replay). */
  async replayProgress(sessionId: string): Promise<ReplayProgress> {
    return replayProgressOf(await readSessionLog(this.#ctx, sessionId));
  }

  /**
   * Two sessions compared turn by turn (change 51): messages, tool calls, tokens, cost; latency is
   * shown but never counted as a difference. `differences` empty: nothing differs.
   */
  async diff(a: string, b: string): Promise<SessionDiff> {
    const [logA, logB] = await Promise.all([readSessionLog(this.#ctx, a), readSessionLog(this.#ctx, b)]);
    return diffSessionLogs(logA, logB);
  }

  /**
   * Replays each of `sources` with the same options, all at once (the loop workers that own the new
   * sessions run them), waits for every one, and compares each with its source. A replay that
   * cannot start (refused, e.g. by a budget) is a row with its error.
   */
  async replaySessions(
    sources: readonly string[],
    opts: Omit<ReplayRequest, "sessionId" | "fromEntry"> & { timeoutMs?: number } = {},
  ): Promise<ReplayRow[]> {
    const { timeoutMs, ...request } = opts;
    return Promise.all(
      sources.map(async (source): Promise<ReplayRow> => {
        let replay = "";
        try {
          replay = (await this.replayWith(source, request)).sessionId;
          const progress = await this.waitForReplay(replay, timeoutMs !== undefined ? { timeoutMs } : {});
          return replayRowOf(source, replay, await this.diff(source, replay), progress);
        } catch (err) {
          const row = replayRowOf(source, replay, diffSessionLogs([], []), undefined);
          return { ...row, errors: [err instanceof Error ? err.message : String(err)] };
        }
      }),
    );
  }

  /**
   * The session's runs as OpenTelemetry spans (GenAI semantic conventions, PROTOCOL change 46),
   * derived from its log as it stands now; `runId` keeps one run. Spans of a run still going are
   * `open`. The same log gives the same spans and ids.
   */
  trace(sessionId: string, opts: { runId?: string } = {}): Promise<TraceSpan[]> {
    return readSessionTrace(this.#ctx, sessionId, opts);
  }

  /** The tenant's daily limits and what its sessions spent on `day` (default today, UTC), from KV `fleet_budgets`, `fleet_spend_totals` and `fleet_spend`. */
  tenantBudget(day?: string): Promise<TenantBudgetReport> {
    return tenantBudgetOf(this.nc, day);
  }

  /**
   * Sets the tenant's daily limits (`null` removes them). `limits` is checked strictly: an unknown
   * field is `invalid_input`, not ignored. A login that may not write them (only a tenant's operator
   * may) gets `unavailable` with code `permission`.
   */
  setTenantLimits(limits: BudgetLimits | null): Promise<void> {
    return setTenantLimitsOf(this.nc, limits);
  }

  // ---------------------------------------------------------------------------------------------
  // Approval rules (PROTOCOL "Approvals"); a session's are set with `setApprovalRules`

  /** The session's approval rules in force (its last `approval_rules_set`; empty: none). */
  approvalRules(sessionId: string): Promise<ApprovalRule[]> {
    return sessionApprovalRulesOf(this.#ctx, sessionId);
  }

  /** The tenant's approval rules (KV `fleet_config` key `approval_rules`; empty: none). */
  tenantApprovalRules(): Promise<ApprovalRule[]> {
    return tenantApprovalRulesOf(this.nc);
  }

  /**
   * Replaces the tenant's approval rules (`[]` removes them), checked strictly (`invalid_input`).
   * The loop workers apply them from their next tool call on. Only an operator may write them.
   */
  setTenantApprovalRules(rules: ApprovalRule[]): Promise<ApprovalRule[]> {
    return setTenantApprovalRulesOf(this.nc, rules);
  }

  // ---------------------------------------------------------------------------------------------
  // Content by reference (PROTOCOL "Large inputs")

  /**
   * The bytes of an object a block or a tool result refers to (`fleet_blobs`, `fleet_inputs`):
   * a text's UTF-8, an image's bytes. Undefined when there is no such object.
   */
  async readBlob(ref: Pick<BlobRef, "bucket" | "name">): Promise<Uint8Array | undefined> {
    try {
      return await this.#ctx.blobs.read(ref);
    } catch (err) {
      throw new FleetError("unavailable", "blobs", `cannot read ${ref.bucket}/${ref.name} (${describeError(err)})`, {
        cause: err,
      });
    }
  }

  /**
   * `value` (an event, a message, a replay's messages, anything) with every text and image block
   * by reference resolved: its content inline, its `blob` gone. Events and views keep references;
   * this is how a reader gets the content.
   */
  async resolveBlobs<T>(value: T): Promise<T> {
    try {
      return await resolveBlobBlocks(value, this.#ctx.blobs);
    } catch (err) {
      throw new FleetError("unavailable", "blobs", `cannot resolve content by reference (${describeError(err)})`, {
        cause: err,
      });
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Session-store queries (`fleet.store.<op>`)

  /** The built context at a leaf (default the session's leaf); `minSeq` waits for the projection. */
  getContext(
    sessionId: string,
    opts: { leafId?: string | null; minSeq?: number; timeoutMs?: number } = {},
  ): Promise<StoreResult<"get_context">> {
    return storeRequest(
      this.nc,
      "get_context",
      { sessionId, ...opts },
      this.#timeoutFor(opts.timeoutMs),
      this.#ctx.blobs,
    );
  }
  getTree(sessionId: string, opts: { minSeq?: number } = {}): Promise<StoreResult<"get_tree">> {
    return storeRequest(this.nc, "get_tree", { sessionId, ...opts }, this.#requestTimeoutMs, this.#ctx.blobs);
  }
  getBranch(sessionId: string, leafId?: string | null): Promise<StoreResult<"get_branch">> {
    const request = leafId === undefined ? { sessionId } : { sessionId, leafId };
    return storeRequest(this.nc, "get_branch", request, this.#requestTimeoutMs, this.#ctx.blobs);
  }
  getEntry(sessionId: string, entryId: string): Promise<StoreResult<"get_entry">> {
    return storeRequest(this.nc, "get_entry", { sessionId, entryId }, this.#requestTimeoutMs, this.#ctx.blobs);
  }
  listSessions(opts: { limit?: number; cursor?: string } = {}): Promise<StoreResult<"list_sessions">> {
    return storeRequest(this.nc, "list_sessions", opts, this.#requestTimeoutMs, this.#ctx.blobs);
  }
  /** Sessions with an open run, by id (the store's running index), paged. */
  listRunning(opts: { limit?: number; cursor?: string } = {}): Promise<StoreResult<"list_running">> {
    return storeRequest(this.nc, "list_running", opts, this.#requestTimeoutMs, this.#ctx.blobs);
  }
  /** Sessions whose id or name (each from any word) or a label starts with `q`, case-insensitive, paged. */
  searchSessions(q: string, opts: { limit?: number; cursor?: string } = {}): Promise<StoreResult<"search_sessions">> {
    return storeRequest(this.nc, "search_sessions", { q, ...opts }, this.#requestTimeoutMs, this.#ctx.blobs);
  }
  /** Pending tool approvals, oldest first: every session's, or one session's. */
  /** Sessions per agent version (every agent's, or `name`'s), from the store's agents index. */
  countAgentSessions(name?: string): Promise<StoreResult<"count_agent_sessions">> {
    return storeRequest(
      this.nc,
      "count_agent_sessions",
      name !== undefined ? { name } : {},
      this.#requestTimeoutMs,
      this.#ctx.blobs,
    );
  }
  listApprovals(opts: { sessionId?: string } = {}): Promise<StoreResult<"list_approvals">> {
    return storeRequest(this.nc, "list_approvals", opts, this.#requestTimeoutMs, this.#ctx.blobs);
  }
  /** The session as pi v3 JSONL text. */
  async export(sessionId: string): Promise<string> {
    return (await storeRequest(this.nc, "export", { sessionId }, this.#requestTimeoutMs, this.#ctx.blobs)).jsonl;
  }

  #timeoutFor(storeWaitMs: number | undefined): number {
    return storeWaitMs === undefined ? this.#requestTimeoutMs : Math.max(this.#requestTimeoutMs, storeWaitMs + 2_000);
  }
}
