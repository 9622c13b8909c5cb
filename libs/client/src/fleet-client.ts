// FleetClient: drive sessions (commands) and read them (events, live state, replay, store queries).
import { hostname, userInfo } from "node:os";
import {
  type BlobRef,
  BudgetLimits,
  CONFIG_KEYS,
  type CommandOf,
  type CompactionSettings,
  decodeEvent,
  deriveRunSpans,
  type EventOf,
  type FleetCommand,
  type FleetEvent,
  foldSessionSpend,
  initialSessionSpend,
  KV_BUCKETS,
  type LifecycleRecord,
  type ModelRef,
  partitionOf,
  type SessionConfigPatch,
  type SessionEntry,
  type SessionSpend,
  STREAMS,
  subjects,
  type ThinkingLevel,
  type TraceSpan,
  validate,
} from "@fleet/protocol";
import {
  type BlobAccess,
  connectFleet,
  createBlobAccess,
  isStorageFullError,
  lastSubjectSeq,
  type NatsAuthSettings,
  NatsConnectError,
  natsAuthFromEnv,
  readSubject,
  redactUrl,
  resolveBlobBlocks,
} from "@fleet/runtime";
import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { commandBytes } from "./command-bytes.js";
import { CommandRejectedError, FleetError, isFleetError, storageFullError } from "./errors.js";
import { tailSubject } from "./event-tail.js";
import { newId, newSessionId } from "./ids.js";
import { readLifecycleRecord, watchLifecycleRecord } from "./lifecycle-wait.js";
import { LiveSession } from "./live-session.js";
import { type MessageInput, toMessageFields } from "./message-input.js";
import { emptySessionView, foldSessionViewEvents, type SessionView } from "./session-view.js";
import { type StoreResult, storeRequest } from "./store-request.js";
import { readTenantBudget, type TenantBudgetReport, writeTenantLimits } from "./tenant-budget.js";

export interface FleetClientOptions {
  /** Comma-separated server URLs. Default `nats://127.0.0.1:4222`. */
  natsUrl?: string;
  /** Connection name shown in server monitoring. Default `fleet-client`. */
  name?: string;
  /** Initial connect timeout. Default 5 000 ms. */
  connectTimeoutMs?: number;
  /** How long a command waits for its outcome event. Default 30 000 ms. */
  commandTimeoutMs?: number;
  /** How long a session-store query waits for its reply. Default 10 000 ms. */
  requestTimeoutMs?: number;
  /** Reconnect attempts after the connection is lost; default -1 (forever). */
  maxReconnectAttempts?: number;
  /** Partition count P; default: read from KV `fleet_config` (key `partitions`). */
  partitions?: number;
  /**
   * How to log in: a creds file, an nkey seed file, user and password, a token, TLS files. Default:
   * the NATS_CREDS, NATS_NKEY, NATS_USER/NATS_PASSWORD, NATS_TOKEN and NATS_TLS_* variables; `{}` =
   * anonymous. The user is a tenant's `reader` (watch, replay, queries) or `operator` (also commands).
   */
  auth?: NatsAuthSettings;
  /**
   * Called with one line for each permission violation on this connection (naming the user and the
   * subject), e.g. a reader that sent a command. The failing call also rejects.
   */
  onPermissionError?: (line: string) => void;
}

/** Per-command options. */
export interface CommandOptions {
  /**
   * The command id (also its `Nats-Msg-Id`); default a fresh UUIDv7. Re-sending an id is idempotent; a
   * re-send also stores the command again if the stream lost its first copy (PROTOCOL change 32).
   */
  commandId?: string;
  /** Overrides `commandTimeoutMs`. */
  timeoutMs?: number;
  /**
   * W3C trace context of the caller's span (PROTOCOL change 46): the run the command starts joins
   * that trace in the spans derived from the log. An invalid traceparent fails `invalid_input`.
   */
  traceparent?: string;
  tracestate?: string;
}

/** Options of `deleteSession`, `archiveSession` and `restoreSession`. */
export interface LifecycleOptions extends CommandOptions {
  /** Who asks, for the lifecycle record the auditor reads; default `<user>@<host>` of this process. */
  by?: string;
}

/** A command's accepted outcome. */
export interface CommandOutcome {
  sessionId: string;
  commandId: string;
  commandType: string;
  /** Stream sequence of the `command_accepted` event: the events the command causes come after it. */
  seq: number;
}

/** A command without its envelope (`id`, `sessionId`, `ts`), for `send`. */
export type CommandBody = FleetCommand extends infer C
  ? C extends FleetCommand
    ? Omit<C, "id" | "sessionId" | "ts">
    : never
  : never;

/** A command's outcome event and its stream sequence. */
export interface OutcomeRecord {
  seq: number;
  event: EventOf<"command_accepted"> | EventOf<"command_rejected">;
}

/** One event of a session and its stream sequence in FLEET_EVENTS. */
export interface SessionEventItem {
  seq: number;
  event: FleetEvent;
}

/** A `SessionEventItem` with the stored bytes (the event's JSON) it was decoded from. */
export interface SessionEventRecord extends SessionEventItem {
  data: Uint8Array;
}

export interface EventsOptions {
  /**
   * Where to start: a stream sequence (inclusive), `"start"` (the first event; the default) or
   * `"new"` (only events appended after this call).
   */
  from?: number | "start" | "new";
  /** Ends the iteration. */
  signal?: AbortSignal;
  /** Called for a stored message that is not a valid event (it is skipped). */
  onInvalid?: (seq: number, error: string) => void;
  /** Called when the underlying consumer is recreated (reconnect, server restart). */
  onResume?: (nextSeq: number) => void;
}

/** `replay()`'s answer: the session as it stood at `view.seq`. */
export interface ReplayResult extends SessionView {
  /** Events applied. */
  events: number;
  /** Stored messages that did not decode as events (skipped). */
  invalid: { seq: number; error: string }[];
  /** Tokens and cost spent per run, session and UTC day, and the budget in force (the loop's fold). */
  spend: SessionSpend;
}

export interface CreateSessionOptions extends CommandOptions {
  /** Default a fresh `s-…` id. */
  sessionId?: string;
  /** Start the new session as a copy of another session's branch ending at `entryId`. */
  forkFrom?: { sessionId: string; entryId: string };
}

/** Input of `importSession`: pi v3 JSONL text is parsed with the protocol's importer by the caller. */
export interface ImportInput {
  entries: SessionEntry[];
  leafId?: string | null;
  config?: SessionConfigPatch;
}

const DEFAULT_URL = "nats://127.0.0.1:4222";

/**
 * A connection to a Fleet deployment.
 * Contract: every command method publishes one command to `fleet.cmd.<p>.<sessionId>` with
 * `Nats-Msg-Id` = its id, then resolves on the matching `command_accepted`, or rejects with a
 * `CommandRejectedError` (`code`, `reason`) on `command_rejected`, or with a `FleetError` of kind
 * `timeout`. The outcome is read from the event subject starting at the sequence after the last
 * event that existed before the publish, so it cannot be missed.
 */
export class FleetClient {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  /** P, the partition count. */
  readonly partitions: number;
  readonly #commandTimeoutMs: number;
  readonly #requestTimeoutMs: number;
  readonly #blobs: BlobAccess;

  private constructor(
    nc: NatsConnection,
    jsm: JetStreamManager,
    partitions: number,
    opts: { commandTimeoutMs: number; requestTimeoutMs: number },
  ) {
    this.nc = nc;
    this.jsm = jsm;
    this.js = jetstream(nc);
    this.partitions = partitions;
    this.#commandTimeoutMs = opts.commandTimeoutMs;
    this.#requestTimeoutMs = opts.requestTimeoutMs;
    this.#blobs = createBlobAccess(nc);
  }

  /**
   * Connects and reads P from KV `fleet_config`.
   * Errors: `FleetError` kind `unavailable` when the server cannot be reached, JetStream is off, or
   * the deployment has not been set up (no `fleet_config.partitions`).
   */
  static async connect(opts: FleetClientOptions = {}): Promise<FleetClient> {
    const url = opts.natsUrl ?? DEFAULT_URL;
    let nc: NatsConnection;
    try {
      ({ nc } = await connectFleet({
        role: "operator",
        url,
        name: opts.name ?? "fleet-client",
        auth: opts.auth ?? natsAuthFromEnv(process.env),
        timeoutMs: opts.connectTimeoutMs ?? 5_000,
        maxReconnectAttempts: opts.maxReconnectAttempts ?? -1,
        ...(opts.onPermissionError ? { onPermissionError: opts.onPermissionError } : {}),
      }));
    } catch (err) {
      const message = describe(err);
      if (err instanceof NatsConnectError && err.code === "login_refused") {
        throw new FleetError("unavailable", "login_refused", message, { cause: err });
      }
      if (err instanceof NatsConnectError && err.code === "settings") {
        throw new FleetError("invalid_input", "nats_auth", message, { cause: err });
      }
      throw new FleetError("unavailable", "connection_refused", `cannot reach NATS at ${redactUrl(url)} (${message})`, {
        cause: err,
      });
    }
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
  static async fromConnection(
    nc: NatsConnection,
    opts: Omit<FleetClientOptions, "natsUrl" | "name" | "maxReconnectAttempts"> = {},
  ): Promise<FleetClient> {
    const url = nc.getServer();
    try {
      const jsm = await jetstreamManager(nc, { timeout: opts.connectTimeoutMs ?? 5_000 });
      const partitions = opts.partitions ?? (await readPartitions(nc, url));
      return new FleetClient(nc, jsm, partitions, {
        commandTimeoutMs: opts.commandTimeoutMs ?? 30_000,
        requestTimeoutMs: opts.requestTimeoutMs ?? 10_000,
      });
    } catch (err) {
      if (isFleetError(err)) throw err;
      throw new FleetError(
        "unavailable",
        "jetstream",
        `JetStream is not available at ${redactUrl(url)} (${describe(err)})`,
        {
          cause: err,
        },
      );
    }
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
    return subjects.event(this.partitionOf(sessionId), sessionId);
  }

  /** Stream sequence of the session's last event, 0 when it has none. */
  async lastSeq(sessionId: string): Promise<number> {
    try {
      return await lastSubjectSeq(this.jsm, STREAMS.events.name, this.eventSubject(sessionId));
    } catch (err) {
      throw new FleetError("unavailable", "stream", `cannot read ${STREAMS.events.name} (${describe(err)})`, {
        cause: err,
      });
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Commands

  /** Sends any command to a session (the generic form of the methods below). */
  async send(sessionId: string, body: CommandBody, opts: CommandOptions = {}): Promise<CommandOutcome> {
    const { seq, event } = await this.outcomeOf(sessionId, body, opts);
    if (event.type === "command_rejected") {
      throw new CommandRejectedError({
        code: event.code,
        reason: event.reason,
        commandId: event.commandId,
        commandType: event.commandType,
        sessionId,
        seq,
      });
    }
    return { sessionId, commandId: event.commandId, commandType: body.type, seq };
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
    return this.#submit(command, opts.timeoutMs ?? this.#commandTimeoutMs);
  }

  /** Creates a session (optionally as a fork); resolves with its id once accepted. */
  async createSession(
    config: SessionConfigPatch = {},
    opts: CreateSessionOptions = {},
  ): Promise<CommandOutcome & { sessionId: string }> {
    const sessionId = opts.sessionId ?? newSessionId();
    const body: Omit<CommandOf<"create_session">, "id" | "sessionId" | "ts"> = { type: "create_session", config };
    if (opts.forkFrom) body.forkFrom = opts.forkFrom;
    return this.send(sessionId, body, opts);
  }

  /** `create_session` with `forkFrom: {sessionId, entryId}`: a new session holding that branch. */
  fork(
    sessionId: string,
    entryId: string,
    opts: Omit<CreateSessionOptions, "forkFrom"> & { config?: SessionConfigPatch } = {},
  ): Promise<CommandOutcome & { sessionId: string }> {
    return this.createSession(opts.config ?? {}, { ...opts, forkFrom: { sessionId, entryId } });
  }

  /** Starts a run (`busy` while one is active). A prompt to an unknown session creates it with defaults. */
  prompt(sessionId: string, input: MessageInput, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "prompt", ...toMessageFields(input) } as CommandBody, opts);
  }
  /** Queues a steering message (delivered after the current tool batch; queued for the next run when idle). */
  steer(sessionId: string, input: MessageInput, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "steer", ...toMessageFields(input) } as CommandBody, opts);
  }
  /** Queues a follow-up message (delivered when the agent would otherwise stop). */
  followUp(sessionId: string, input: MessageInput, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "follow_up", ...toMessageFields(input) } as CommandBody, opts);
  }
  /** Queues a message for the start of the next run. */
  nextTurn(sessionId: string, input: MessageInput, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "next_turn", ...toMessageFields(input) } as CommandBody, opts);
  }
  /** Continues from the current context (`conflict` when there is nothing to continue). */
  continue(sessionId: string, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "continue" }, opts);
  }
  /** Aborts the active run (a no-op when idle). */
  abort(sessionId: string, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "abort" }, opts);
  }
  setModel(sessionId: string, model: ModelRef, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "set_model", provider: model.provider, modelId: model.modelId }, opts);
  }
  setThinkingLevel(sessionId: string, level: ThinkingLevel, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "set_thinking_level", level }, opts);
  }
  setActiveTools(sessionId: string, toolNames: string[], opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "set_active_tools", toolNames }, opts);
  }
  configure(sessionId: string, patch: SessionConfigPatch, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "configure", ...patch }, opts);
  }
  /** Automatic compaction settings (`enabled`, `reserveTokens`, `keepRecentTokens`); absent fields are kept. */
  setCompactionSettings(
    sessionId: string,
    settings: Partial<CompactionSettings>,
    opts?: CommandOptions,
  ): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "set_compaction_settings", ...settings }, opts);
  }
  compact(sessionId: string, instructions?: string, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "compact", ...(instructions ? { instructions } : {}) }, opts);
  }
  /** Moves the leaf (`null` = before the first entry); optionally summarizes the abandoned branch. */
  navigate(
    sessionId: string,
    targetId: string | null,
    opts: CommandOptions & { summarize?: boolean; instructions?: string; label?: string } = {},
  ): Promise<CommandOutcome> {
    const { summarize, instructions, label, ...rest } = opts;
    const body: CommandBody = {
      type: "navigate",
      targetId,
      ...(summarize !== undefined ? { summarize } : {}),
      ...(instructions !== undefined ? { instructions } : {}),
      ...(label !== undefined ? { label } : {}),
    };
    return this.send(sessionId, body, rest);
  }
  /** Sets (or, with `null`, removes) the label of an entry. */
  label(sessionId: string, targetId: string, label: string | null, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "label", targetId, label }, opts);
  }
  setName(sessionId: string, name: string, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "set_name", name }, opts);
  }
  appendCustom(sessionId: string, customType: string, data: unknown, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "append_custom", customType, data }, opts);
  }
  appendMessage(
    sessionId: string,
    message: CommandOf<"append_message">["message"],
    opts: CommandOptions & { deliverAs?: "steer" | "followUp" | "nextTurn"; triggerTurn?: boolean } = {},
  ): Promise<CommandOutcome> {
    const { deliverAs, triggerTurn, ...rest } = opts;
    const body: CommandBody = {
      type: "append_message",
      message,
      ...(deliverAs !== undefined ? { deliverAs } : {}),
      ...(triggerTurn !== undefined ? { triggerTurn } : {}),
    };
    return this.send(sessionId, body, rest);
  }
  approveToolCall(sessionId: string, toolCallId: string, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "approve_tool_call", toolCallId }, opts);
  }
  denyToolCall(sessionId: string, toolCallId: string, reason?: string, opts?: CommandOptions): Promise<CommandOutcome> {
    return this.send(sessionId, { type: "deny_tool_call", toolCallId, ...(reason ? { reason } : {}) }, opts);
  }
  /** Creates a new session holding an imported tree (`import_session`); the loop re-mints entry ids. */
  importSession(
    input: ImportInput,
    opts: CommandOptions & { sessionId?: string } = {},
  ): Promise<CommandOutcome & { sessionId: string }> {
    const { sessionId = newSessionId(), ...rest } = opts;
    const body: CommandBody = {
      type: "import_session",
      entries: input.entries,
      ...(input.leafId !== undefined ? { leafId: input.leafId } : {}),
      ...(input.config !== undefined ? { config: input.config } : {}),
    };
    return this.send(sessionId, body, rest);
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
  async lifecycleRecord(sessionId: string): Promise<LifecycleRecord | null> {
    try {
      return await readLifecycleRecord(this.jsm, sessionId);
    } catch (err) {
      throw new FleetError("unavailable", "stream", `cannot read ${STREAMS.events.name} (${describe(err)})`, {
        cause: err,
      });
    }
  }

  async #lifecycle(
    sessionId: string,
    type: "delete_session" | "archive_session" | "restore_session",
    opts: LifecycleOptions,
  ): Promise<LifecycleRecord> {
    const timeoutMs = opts.timeoutMs ?? this.#commandTimeoutMs;
    const command = {
      type,
      id: opts.commandId ?? newId(),
      sessionId,
      ts: Date.now(),
      by: opts.by ?? defaultRequester(),
    } as FleetCommand;
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), timeoutMs);
    // Listening first: a deletion purges its outcome, so its record may be all there is to see.
    const watch = watchLifecycleRecord(this.nc, sessionId, command.id, abort.signal);
    try {
      const earlier = await this.lifecycleRecord(sessionId);
      if (earlier?.commandId === command.id) return earlier;
      const outcome = this.#submit(command, timeoutMs, abort.signal).then(
        (o) => ({ kind: "outcome" as const, ...o }),
        (err: unknown) => ({ kind: "failed" as const, err }),
      );
      const first = await Promise.race([watch.record.then((record) => ({ kind: "record" as const, record })), outcome]);
      if (first.kind === "record" && first.record) return await this.#settled(first.record, abort.signal);
      if (first.kind === "outcome" && first.event.type === "command_rejected") {
        throw new CommandRejectedError({
          code: first.event.code,
          reason: first.event.reason,
          commandId: first.event.commandId,
          commandType: first.event.commandType,
          sessionId,
          seq: first.seq,
        });
      }
      if (first.kind === "failed" && !(isFleetError(first.err) && first.err.kind === "timeout")) throw first.err;
      const record = await watch.record;
      if (record) return await this.#settled(record, abort.signal);
      throw new FleetError(
        "timeout",
        "timeout",
        `${type} ${command.id} of session ${sessionId} did not finish within ${timeoutMs} ms; it goes on (see lifecycleRecord)`,
      );
    } finally {
      clearTimeout(timer);
      abort.abort();
      watch.close();
    }
  }

  /**
   * A deletion's record is written just before its tombstone (the outcome and `session_deleting`)
   * is purged: resolves with the record once the session's subject no longer ends with it.
   */
  async #settled(record: LifecycleRecord, signal: AbortSignal): Promise<LifecycleRecord> {
    if (record.type === "session_restored") return record;
    const subject = this.eventSubject(record.sessionId);
    while (!signal.aborted) {
      const last = await this.jsm.direct.getMessage(STREAMS.events.name, { last_by_subj: subject });
      const event = last ? decodeEvent(last.data) : undefined;
      const tombstone =
        event?.ok &&
        ((event.value.type === "command_accepted" && event.value.commandId === record.commandId) ||
          event.value.meta.commandId === record.commandId);
      if (!tombstone) return record;
      await new Promise((r) => setTimeout(r, 25));
    }
    return record;
  }

  async #submit(command: FleetCommand, timeoutMs: number, signal?: AbortSignal): Promise<OutcomeRecord> {
    // Large parts, or the whole command, go to `fleet_inputs` first (PROTOCOL "Large inputs").
    const encoded = await commandBytes(command, this.#blobs);
    const partition = this.partitionOf(command.sessionId);
    const eventSubject = subjects.event(partition, command.sessionId);
    const commandSubject = subjects.command(partition, command.sessionId);
    // The outcome comes after every event that exists now: start reading right after them.
    const logEnd = await this.lastSeq(command.sessionId);
    let fromSeq = logEnd + 1;
    // A re-sent command id is deduplicated to its first copy (the ack names its sequence). A copy
    // that the work-queue stream no longer holds was either handled, and its outcome is in the log,
    // or lost (a nats-server 2.9 cluster was seen losing stored commands after node kills). Once the
    // log up to `logEnd` shows no outcome, a lost copy is published again under a msgID derived from
    // it, so concurrent re-senders add one copy; the loop answers a command id it has decided as a
    // duplicate.
    let firstCopy: number | undefined;
    const republishIfLost = async () => {
      const seq = firstCopy;
      firstCopy = undefined;
      if (seq === undefined) return;
      const stored = await this.jsm.streams.getMessage(STREAMS.commands.name, { seq }).catch(() => "unknown");
      if (stored !== null) return;
      await this.js.publish(commandSubject, encoded.bytes, { msgID: `${command.id}#${seq}` });
    };
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), timeoutMs);
    signal?.addEventListener("abort", () => abort.abort(), { once: true });
    try {
      try {
        const ack = await this.js.publish(commandSubject, encoded.bytes, { msgID: command.id });
        if (ack.duplicate) {
          fromSeq = 1;
          firstCopy = ack.seq;
          if (logEnd === 0) await republishIfLost().catch(() => undefined);
        }
      } catch (err) {
        if (isStorageFullError(err)) throw storageFullError(`send ${command.type} ${command.id}`, err);
        throw new FleetError(
          "unavailable",
          "publish_failed",
          `cannot publish ${command.type} to ${STREAMS.commands.name} (${describe(err)}); is the stack set up (fleet up)?`,
          { cause: err },
        );
      }
      const tail = tailSubject(this.nc, this.js, STREAMS.events.name, eventSubject, {
        fromSeq,
        signal: abort.signal,
      });
      for await (const record of tail) {
        const decoded = decodeEvent(record.data);
        if (!decoded.ok) continue;
        const event = decoded.value;
        if (
          (event.type === "command_accepted" || event.type === "command_rejected") &&
          event.commandId === command.id
        ) {
          return { seq: record.seq, event };
        }
        if (record.seq >= logEnd) await republishIfLost().catch(() => undefined);
      }
      if (this.nc.isClosed()) throw new FleetError("unavailable", "closed", "the NATS connection was closed");
      throw new FleetError(
        "timeout",
        "timeout",
        `no outcome for ${command.type} ${command.id} on session ${command.sessionId} within ${timeoutMs} ms; is a loop worker running? (fleet doctor)`,
      );
    } finally {
      clearTimeout(timer);
      abort.abort();
    }
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
    return this.#iterate(sessionId, this.#startOf(sessionId, opts), opts, (seq, event) => ({ seq, event }));
  }

  /**
   * `events()` with each event's stored bytes, for a reader that passes the JSON on as it is (the
   * gateway frames it without serialising the event again). Same contract as `events()`.
   */
  eventRecords(sessionId: string, opts: EventsOptions = {}): AsyncIterable<SessionEventRecord> {
    return this.#iterate(sessionId, this.#startOf(sessionId, opts), opts, (seq, event, data) => ({ seq, event, data }));
  }

  #startOf(sessionId: string, opts: EventsOptions): Promise<number> {
    const from = opts.from ?? "start";
    const start: Promise<number> =
      from === "new" ? this.lastSeq(sessionId).then((s) => s + 1) : Promise.resolve(from === "start" ? 1 : from);
    start.catch(() => undefined);
    if (typeof from === "number" && (!Number.isInteger(from) || from < 1)) {
      throw new FleetError("invalid_input", "invalid", `events: from must be a positive integer, "start" or "new"`);
    }
    return start;
  }

  async *#iterate<T>(
    sessionId: string,
    start: Promise<number>,
    opts: EventsOptions,
    item: (seq: number, event: FleetEvent, data: Uint8Array) => T,
  ): AsyncGenerator<T> {
    const fromSeq = await start;
    const tail = tailSubject(this.nc, this.js, STREAMS.events.name, this.eventSubject(sessionId), {
      fromSeq,
      ...(opts.signal ? { signal: opts.signal } : {}),
      onResume: (next) => opts.onResume?.(next),
    });
    for await (const record of tail) {
      const decoded = decodeEvent(record.data);
      if (!decoded.ok) {
        opts.onInvalid?.(record.seq, decoded.error);
        continue;
      }
      yield item(record.seq, decoded.value, record.data);
    }
  }

  /**
   * The session folded live (agent state with `foldAgentState`, tree with `foldSessionTree`).
   * Resolves once the fold has caught up with the last event that existed at the call.
   */
  async state(sessionId: string, opts: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<LiveSession> {
    const target = await this.lastSeq(sessionId);
    const abort = new AbortController();
    opts.signal?.addEventListener("abort", () => abort.abort(), { once: true });
    const live = new LiveSession(sessionId, abort);
    // The events up to `target` are folded at once (linear in the log's length), later ones one by
    // one. Reading `target`, or an undecodable record at or past it, ends the catch-up.
    const backlog: SessionEventItem[] = [];
    let caught = target === 0;
    let settle: (err?: Error) => void = () => undefined;
    const caughtUp = new Promise<void>((resolve, reject) => {
      settle = (err) => (err ? reject(err) : resolve());
    });
    const catchUp = (seq: number) => {
      if (caught || seq < target) return;
      caught = true;
      live.catchUp(backlog.splice(0));
      settle();
    };
    if (caught) settle();
    const timeoutMs = opts.timeoutMs ?? 30_000;
    const timer = setTimeout(
      () => settle(new FleetError("timeout", "timeout", `session ${sessionId}: not caught up within ${timeoutMs} ms`)),
      timeoutMs,
    );
    void (async () => {
      try {
        const items = this.events(sessionId, { from: 1, signal: abort.signal, onInvalid: (seq) => catchUp(seq) });
        for await (const item of items) {
          if (caught) live.apply(item.seq, item.event);
          else {
            backlog.push(item);
            catchUp(item.seq);
          }
        }
        settle(new FleetError("unavailable", "closed", `session ${sessionId}: live state closed`));
      } catch (err) {
        const error = err instanceof Error ? err : new Error(String(err));
        live.fail(error);
        settle(error);
      }
    })();
    try {
      await caughtUp;
    } catch (err) {
      live.close();
      throw err;
    } finally {
      clearTimeout(timer);
    }
    return live;
  }

  /**
   * The session's runs as OpenTelemetry spans (GenAI semantic conventions, PROTOCOL change 46),
   * derived from its log as it stands now with `deriveRunSpans`; `runId` keeps one run. Spans of a
   * run still going are `open`. The same log gives the same spans and ids.
   */
  async trace(sessionId: string, opts: { runId?: string } = {}): Promise<TraceSpan[]> {
    const events: FleetEvent[] = [];
    try {
      for await (const record of readSubject(this.js, this.jsm, STREAMS.events.name, this.eventSubject(sessionId))) {
        const decoded = decodeEvent(record.data);
        if (decoded.ok) events.push(decoded.value);
      }
    } catch (err) {
      throw new FleetError("unavailable", "stream", `cannot read ${STREAMS.events.name} (${describe(err)})`, {
        cause: err,
      });
    }
    return deriveRunSpans(events, opts.runId !== undefined ? { runId: opts.runId } : {});
  }

  /**
   * The agent state and session tree as they stood at stream sequence `toSeq` (default: now):
   * reads the session's subject up to `toSeq` and folds it. `view.seq` is the last sequence applied.
   * `from`: an earlier replay of the same session (never changed by this call); only the events after
   * `from.seq` are read and folded onto it, and `events` / `invalid` count only those.
   */
  async replay(sessionId: string, opts: { toSeq?: number; from?: ReplayResult } = {}): Promise<ReplayResult> {
    if (opts.toSeq !== undefined && (!Number.isInteger(opts.toSeq) || opts.toSeq < 0)) {
      throw new FleetError("invalid_input", "invalid", "replay: toSeq must be a non-negative integer");
    }
    const applied: SessionEventItem[] = [];
    const invalid: { seq: number; error: string }[] = [];
    const start: ReplayResult = opts.from ?? {
      ...emptySessionView(),
      events: 0,
      invalid: [],
      spend: initialSessionSpend(),
    };
    if (opts.toSeq !== undefined && opts.toSeq <= start.seq) {
      if (opts.toSeq < start.seq) throw new FleetError("invalid_input", "invalid", "replay: toSeq is before from.seq");
      return { ...start, events: 0, invalid };
    }
    try {
      const records = readSubject(this.js, this.jsm, STREAMS.events.name, this.eventSubject(sessionId), {
        ...(start.seq > 0 ? { fromSeq: start.seq + 1 } : {}),
        ...(opts.toSeq !== undefined ? { toSeq: opts.toSeq } : {}),
      });
      for await (const record of records) {
        const decoded = decodeEvent(record.data);
        if (decoded.ok) applied.push({ seq: record.seq, event: decoded.value });
        else invalid.push({ seq: record.seq, error: decoded.error });
      }
    } catch (err) {
      if (isFleetError(err)) throw err;
      throw new FleetError("unavailable", "stream", `cannot read ${STREAMS.events.name} (${describe(err)})`, {
        cause: err,
      });
    }
    const spend = structuredClone(start.spend);
    for (const { event } of applied) foldSessionSpend(spend, event);
    return { ...foldSessionViewEvents(start, applied), events: applied.length, invalid, spend };
  }

  /** The tenant's daily limits and what its sessions spent on `day` (default today, UTC), from KV `fleet_budgets`. */
  async tenantBudget(day?: string): Promise<TenantBudgetReport> {
    try {
      return await readTenantBudget(this.nc, day);
    } catch (err) {
      throw new FleetError("unavailable", "kv", `cannot read KV ${KV_BUCKETS.budgets.name} (${describe(err)})`, {
        cause: err,
      });
    }
  }

  /**
   * Sets the tenant's daily limits (`null` removes them). `limits` is checked strictly: an unknown
   * field is `invalid_input`, not ignored. A login that may not write them (only a tenant's operator
   * may) gets `unavailable` with code `permission`.
   */
  async setTenantLimits(limits: BudgetLimits | null): Promise<void> {
    let checked: BudgetLimits | null = null;
    if (limits !== null) {
      const parsed = validate(BudgetLimits.strict(), limits);
      if (!parsed.ok) throw new FleetError("invalid_input", "invalid", `budget limits: ${parsed.error}`);
      checked = parsed.value;
    }
    try {
      await writeTenantLimits(this.nc, checked);
    } catch (err) {
      const what = `the tenant's daily budget in KV ${KV_BUCKETS.budgets.name}`;
      if (isStorageFullError(err)) throw storageFullError(`write ${what}`, err);
      if (isPermissionDenied(err)) {
        throw new FleetError(
          "unavailable",
          "permission",
          `not allowed to set ${what} (an operator may): ${describe(err)}`,
        );
      }
      throw new FleetError("unavailable", "kv", `cannot write ${what} (${describe(err)})`, { cause: err });
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Content by reference (PROTOCOL "Large inputs")

  /**
   * The bytes of an object a block or a tool result refers to (`fleet_blobs`, `fleet_inputs`):
   * a text's UTF-8, an image's bytes. Undefined when there is no such object.
   */
  async readBlob(ref: Pick<BlobRef, "bucket" | "name">): Promise<Uint8Array | undefined> {
    try {
      return await this.#blobs.read(ref);
    } catch (err) {
      throw new FleetError("unavailable", "blobs", `cannot read ${ref.bucket}/${ref.name} (${describe(err)})`, {
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
      return await resolveBlobBlocks(value, this.#blobs);
    } catch (err) {
      throw new FleetError("unavailable", "blobs", `cannot resolve content by reference (${describe(err)})`, {
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
    return storeRequest(this.nc, "get_context", { sessionId, ...opts }, this.#timeoutFor(opts.timeoutMs), this.#blobs);
  }
  getTree(sessionId: string, opts: { minSeq?: number } = {}): Promise<StoreResult<"get_tree">> {
    return storeRequest(this.nc, "get_tree", { sessionId, ...opts }, this.#requestTimeoutMs, this.#blobs);
  }
  getBranch(sessionId: string, leafId?: string | null): Promise<StoreResult<"get_branch">> {
    const request = leafId === undefined ? { sessionId } : { sessionId, leafId };
    return storeRequest(this.nc, "get_branch", request, this.#requestTimeoutMs, this.#blobs);
  }
  getEntry(sessionId: string, entryId: string): Promise<StoreResult<"get_entry">> {
    return storeRequest(this.nc, "get_entry", { sessionId, entryId }, this.#requestTimeoutMs, this.#blobs);
  }
  listSessions(opts: { limit?: number; cursor?: string } = {}): Promise<StoreResult<"list_sessions">> {
    return storeRequest(this.nc, "list_sessions", opts, this.#requestTimeoutMs, this.#blobs);
  }
  /** The session as pi v3 JSONL text. */
  async export(sessionId: string): Promise<string> {
    return (await storeRequest(this.nc, "export", { sessionId }, this.#requestTimeoutMs, this.#blobs)).jsonl;
  }

  #timeoutFor(storeWaitMs: number | undefined): number {
    return storeWaitMs === undefined ? this.#requestTimeoutMs : Math.max(this.#requestTimeoutMs, storeWaitMs + 2_000);
  }
}

/** `<user>@<host>` of this process, the requester of a lifecycle command by default. */
function defaultRequester(): string {
  try {
    return `${userInfo().username}@${hostname()}`.slice(0, 256);
  } catch {
    return `pid ${process.pid}@${hostname()}`.slice(0, 256);
  }
}

async function readPartitions(nc: NatsConnection, url: string): Promise<number> {
  const missing = () =>
    new FleetError(
      "unavailable",
      "not_set_up",
      `Fleet is not set up on ${redactUrl(url)}: KV ${KV_BUCKETS.config.name} has no ${CONFIG_KEYS.partitions} (start the stack with fleet up)`,
    );
  let value: number;
  try {
    const kv = await new Kvm(nc).open(KV_BUCKETS.config.name);
    const entry = await kv.get(CONFIG_KEYS.partitions);
    if (entry?.operation !== "PUT") throw missing();
    value = Number(entry.string());
  } catch (err) {
    if (isFleetError(err)) throw err;
    if (isPermissionDenied(err)) {
      throw new FleetError("unavailable", "permission", `cannot read KV ${KV_BUCKETS.config.name}: ${describe(err)}`);
    }
    throw missing();
  }
  if (!Number.isInteger(value) || value < 1) {
    throw new FleetError(
      "protocol",
      "invalid_config",
      `${KV_BUCKETS.config.name}.${CONFIG_KEYS.partitions} is invalid`,
    );
  }
  return value;
}

/** The server refused the operation for this login: the error, or a request error it caused. */
function isPermissionDenied(err: unknown): boolean {
  const name = (e: unknown) => (e instanceof Error ? e.name : undefined);
  return (
    name(err) === "PermissionViolationError" || name((err as Error | undefined)?.cause) === "PermissionViolationError"
  );
}

function describe(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  return String(err);
}
