import { z } from "zod";
import { AgentName, SessionAgent } from "./agents.js";
import { ModelRef } from "./config.js";
import { EventId, SessionId, ToolName } from "./ids.js";
import { ContextMessage, ThinkingLevel } from "./messages.js";
import { PendingApproval } from "./reducers/pending-approvals.js";
import { SessionEntry } from "./session-entry.js";

export const STORE_OPS = [
  "get_context",
  "get_tree",
  "get_branch",
  "get_entry",
  "list_sessions",
  "export",
  "list_idle",
  "list_running",
  "list_approvals",
  "search_sessions",
  "count_agent_sessions",
] as const;
export type StoreOp = (typeof STORE_OPS)[number];

export const GetContextRequest = z.object({
  sessionId: SessionId,
  leafId: EventId.nullable().optional(),
  minSeq: z.number().int().nonnegative().optional(),
  timeoutMs: z.number().int().positive().max(30_000).optional(),
});
export const GetTreeRequest = z.object({ sessionId: SessionId, minSeq: z.number().int().nonnegative().optional() });
export const GetBranchRequest = z.object({ sessionId: SessionId, leafId: EventId.nullable().optional() });
export const GetEntryRequest = z.object({ sessionId: SessionId, entryId: EventId });
export const ListSessionsRequest = z.object({
  limit: z.number().int().positive().max(1000).optional(),
  cursor: z.string().optional(),
});
export const ExportRequest = z.object({ sessionId: SessionId });
/**
 * Sessions not running whose last event is older than `before` (ms), the least recently updated
 * first (the retention janitor's candidates). `cursor` continues after the last session of a page.
 */
export const ListIdleRequest = z.object({
  before: z.number().int().nonnegative(),
  limit: z.number().int().positive().max(1000).optional(),
  cursor: z.string().optional(),
});

/**
 * Sessions with an open run (`agent_start` without its `agent_end`), by session id; `cursor`
 * continues after the last session of a page. Answered from the store's running index: the cost is
 * that of the page, not of the sessions in the store (PROTOCOL change 44).
 */
export const ListRunningRequest = z.object({
  limit: z.number().int().positive().max(1000).optional(),
  cursor: z.string().optional(),
});
/**
 * Pending tool approvals (requested, not yet resolved, ended or cleared by `agent_end`), oldest
 * request first: every session's, or one session's. Answered from the approvals index.
 */
export const ListApprovalsRequest = z.object({ sessionId: SessionId.optional() });
/**
 * Sessions whose id or name (each from any word on) or a label starts with `q` (case-insensitive), in
 * the order of the matched text. Answered from the search index; a page reads about as many index
 * entries as it returns. A session matching on several texts may show on more than one page.
 */
export const SearchSessionsRequest = z.object({
  q: z.string().trim().min(1).max(200),
  limit: z.number().int().positive().max(1000).optional(),
  cursor: z.string().optional(),
});

/**
 * How many sessions run each agent version (change 54): every agent's, or one agent's (`name`).
 * Answered from the store's agents index, one counter per version: the cost is that of the
 * versions, not of the sessions.
 */
export const CountAgentSessionsRequest = z.object({ name: AgentName.optional() });

export const StoreRequest = {
  get_context: GetContextRequest,
  get_tree: GetTreeRequest,
  get_branch: GetBranchRequest,
  get_entry: GetEntryRequest,
  list_sessions: ListSessionsRequest,
  export: ExportRequest,
  list_idle: ListIdleRequest,
  list_running: ListRunningRequest,
  list_approvals: ListApprovalsRequest,
  search_sessions: SearchSessionsRequest,
  count_agent_sessions: CountAgentSessionsRequest,
} as const satisfies Record<StoreOp, z.ZodType>;

/**
 * `unavailable`: the store cannot answer right now and the request may be retried as is, e.g. while
 * it rebuilds from the log after Redis lost its data (it never answers with a partial tree).
 */
export const StoreErrorCode = z.enum(["invalid", "not_found", "timeout", "unavailable"]);
export type StoreErrorCode = z.infer<typeof StoreErrorCode>;
export const StoreError = z.object({ ok: z.literal(false), code: StoreErrorCode, error: z.string() });
export type StoreError = z.infer<typeof StoreError>;

const ok = <S extends z.ZodRawShape>(shape: S) => z.object({ ok: z.literal(true), ...shape });

export const GetContextReply = ok({
  messages: z.array(ContextMessage),
  model: ModelRef.nullable(),
  thinkingLevel: ThinkingLevel,
  activeToolNames: z.array(ToolName).nullable(),
  leafId: EventId.nullable(),
  seq: z.number().int().nonnegative(),
});
export const GetTreeReply = ok({
  entries: z.array(SessionEntry),
  leafId: EventId.nullable(),
  labels: z.record(z.string(), z.string()).optional(),
  seq: z.number().int().nonnegative(),
});
export const GetBranchReply = ok({ entries: z.array(SessionEntry) });
export const GetEntryReply = ok({ entry: SessionEntry });
export const SessionSummary = z.object({
  sessionId: SessionId,
  name: z.string().nullable(),
  status: z.enum(["idle", "running"]),
  updatedAt: z.number().int().nonnegative(),
  seq: z.number().int().nonnegative(),
  /** The agent version the session runs (change 54); absent: none. */
  agent: SessionAgent.optional(),
});
export type SessionSummary = z.infer<typeof SessionSummary>;
export const ListSessionsReply = ok({ sessions: z.array(SessionSummary), cursor: z.string().optional() });
export const ExportReply = ok({ jsonl: z.string() });
export const ListApprovalsReply = ok({ approvals: z.array(PendingApproval) });
/** Versions with at least one session, by name then version. */
export const CountAgentSessionsReply = ok({
  counts: z.array(
    z.object({ name: AgentName, version: z.number().int().positive(), sessions: z.number().int().positive() }),
  ),
});

export const StoreReply = {
  get_context: z.union([GetContextReply, StoreError]),
  get_tree: z.union([GetTreeReply, StoreError]),
  get_branch: z.union([GetBranchReply, StoreError]),
  get_entry: z.union([GetEntryReply, StoreError]),
  list_sessions: z.union([ListSessionsReply, StoreError]),
  export: z.union([ExportReply, StoreError]),
  list_idle: z.union([ListSessionsReply, StoreError]),
  list_running: z.union([ListSessionsReply, StoreError]),
  list_approvals: z.union([ListApprovalsReply, StoreError]),
  search_sessions: z.union([ListSessionsReply, StoreError]),
  count_agent_sessions: z.union([CountAgentSessionsReply, StoreError]),
} as const satisfies Record<StoreOp, z.ZodType>;

export type StoreRequestOf<Op extends StoreOp> = z.infer<(typeof StoreRequest)[Op]>;
export type StoreReplyOf<Op extends StoreOp> = z.infer<(typeof StoreReply)[Op]>;
