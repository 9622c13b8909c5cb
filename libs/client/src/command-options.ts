// The options and answers of FleetClient's command methods.
import type { EventOf, FleetCommand, SessionConfigPatch, SessionEntry } from "@fleet/protocol";

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

export interface CreateSessionOptions extends CommandOptions {
  /** Default a fresh `s-…` id. */
  sessionId?: string;
  /** Start the new session as a copy of another session's branch ending at `entryId`. */
  forkFrom?: { sessionId: string; entryId: string };
  /**
   * Create it from an agent (PROTOCOL "Agents"): `name` (its latest version, pinned now) or
   * `name@version`; the version's settings are the config, and fields of `config` replace them.
   */
  agent?: string;
}

/** Input of `importSession`: pi v3 JSONL text is parsed with the protocol's importer by the caller. */
export interface ImportInput {
  entries: SessionEntry[];
  leafId?: string | null;
  config?: SessionConfigPatch;
}
