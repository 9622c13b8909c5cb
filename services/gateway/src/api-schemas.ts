// Zod schemas of the HTTP API's inputs and answers, built from the protocol's own schemas.
import {
  AgentRef,
  EventId,
  FleetCommand,
  FleetEvent,
  LifecycleRecord,
  ReplayRequest,
  SessionConfigPatch,
  SessionId,
  SessionSummary,
  StoreReply,
} from "@fleet/protocol";
import { z } from "zod";

export const CommandId = z.string().min(1).max(256);

export const SessionParams = z.object({ id: SessionId });

export const ListSessionsQuery = z.object({
  limit: z.coerce.number().int().positive().max(1000).optional(),
  cursor: z.string().min(1).optional(),
  /**
   * Only sessions whose id or name (each from any word on) or a label starts with this (case-insensitive),
   * from the store's search index, in the order of the matched text.
   */
  q: z.string().max(200).optional(),
  /** `running`: only sessions with an open run, by id (the store's running index). */
  status: z.enum(["running"]).optional(),
});
export const SessionList = z.object({ sessions: z.array(SessionSummary), cursor: z.string().optional() });

export const CreateSessionBody = z
  .object({
    /** Default a fresh `s-…` id. */
    sessionId: SessionId.optional(),
    config: SessionConfigPatch.optional(),
    /** Start as a copy of another session's branch ending at `entryId`. */
    forkFrom: z.object({ sessionId: SessionId, entryId: EventId }).optional(),
    /**
     * Create it from an agent: `name` (its latest version, pinned now) or `name@version`; the
     * version's settings are the config, and fields of `config` replace them. Not with `forkFrom`.
     */
    agent: AgentRef.optional(),
    /**
     * Restore this archived session (same id and history) instead of creating one; `sessionId`, when
     * given, must be the same, and `config` and `forkFrom` may not be given.
     */
    restoreFrom: SessionId.optional(),
    /**
     * Create the session as a replay of another (change 51): its branch up to `fromEntry` (default:
     * before its first user message) is copied and its later user messages run again, with the
     * overrides, tools `recorded` (default) or `live`. `config` and `forkFrom` may not be given.
     */
    replayOf: ReplayRequest.optional(),
    commandId: CommandId.optional(),
  })
  .strict();

export const SessionCreated = z.object({
  sessionId: SessionId,
  commandId: CommandId,
  /** Stream sequence of the `command_accepted` event (of a restore: the session's last event). */
  seq: z.number().int().positive(),
  /** A restore's lifecycle record (`session_restored`). */
  record: LifecycleRecord.optional(),
});

/** A deletion or archive that finished: its lifecycle record. */
export const LifecycleDone = z.object({ sessionId: SessionId, commandId: CommandId, record: LifecycleRecord });

/** `DELETE /v1/sessions/{id}`, `POST /v1/sessions/{id}/archive`. */
export const LifecycleQuery = z
  .object({
    commandId: CommandId.optional(),
    /** How long to wait for the operation to finish before answering 202 (default: the gateway's setting). */
    timeoutMs: z.coerce.number().int().min(0).max(600_000).optional(),
  })
  .strict();

/** 202: the command was published, its outcome has not arrived in time; it may still come. */
export const CommandPending = z.object({ sessionId: SessionId, commandId: CommandId, status: z.literal("pending") });

const outcomeEvent = (type: string) => {
  const option = FleetEvent.options.find((o) => o.shape.type.value === type);
  if (!option) throw new Error(`FleetEvent has no ${type}`);
  return option;
};
export const CommandOutcome = z.object({
  /** Stream sequence of the outcome event: the events the command causes come after it. */
  seq: z.number().int().positive(),
  event: z.discriminatedUnion("type", [outcomeEvent("command_accepted"), outcomeEvent("command_rejected")]),
});

/**
 * One protocol command without its envelope: `{type, commandId?, …arguments}`. The session is the
 * path's; `commandId` (default a fresh UUIDv7) becomes the command's id and `Nats-Msg-Id`.
 */
export const CommandBody = z.discriminatedUnion(
  "type",
  FleetCommand.options.map((option) => {
    const { id: _id, sessionId: _sid, ts: _ts, ...shape } = option.shape;
    return z.object({ ...shape, commandId: CommandId.optional() }).strict();
  }) as unknown as [z.ZodObject, ...z.ZodObject[]],
);
export type CommandBody = { type: string; commandId?: string } & Record<string, unknown>;

export const CommandQuery = z.object({
  /** How long to wait for the outcome before answering 202 (default: the gateway's setting; 0: no wait, 202 once stored). */
  timeoutMs: z.coerce.number().int().min(0).max(120_000).optional(),
});

const Bool = z
  .enum(["true", "false", "1", "0"])
  .transform((v) => v === "true" || v === "1")
  .optional();

export const EventsQuery = z.object({
  /** Start after this stream sequence (`Last-Event-ID` wins when both are given); default 0. */
  after: z.coerce.number().int().nonnegative().optional(),
  /** `false`: end at the current end of the log instead of following it. Default `true`. */
  follow: Bool,
  /** A stream ticket of this session (`POST …/events/ticket`), instead of the Authorization header. */
  ticket: z.string().max(1024).optional(),
});

const okBranch = <S extends z.ZodType>(union: S) => {
  const branch = (union as unknown as z.ZodUnion<[z.ZodObject, z.ZodObject]>).options[0];
  return branch.omit({ ok: true });
};
export const SessionTreeBody = okBranch(StoreReply.get_tree);

export const ImportQuery = z.object({
  /** Default a fresh `s-…` id. */
  sessionId: SessionId.optional(),
  commandId: CommandId.optional(),
});

export const ApprovalsQuery = z.object({
  sessionId: SessionId.optional(),
  /** With `sessionId`: the approvals of the sessions it started (sub-agents, change 57) too. */
  descendants: z.enum(["true", "false"]).optional(),
});
