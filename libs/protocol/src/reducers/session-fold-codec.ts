// The session's one fold (`SessionState`) as plain JSON data and back: the body of a snapshot
// (PROTOCOL change 42). Pure; the envelope, checksum and storage are the loop's.

import { z } from "zod";
import type { ApprovalRule } from "../approval-rules.js";
import type { Decoded } from "../codec.js";
import type { CompactionReason, FleetEvent, SessionWrite } from "../events.js";
import type { LifecycleOp } from "../lifecycle.js";
import type { AgentMessage } from "../messages.js";
import { ReplayRecord } from "../replay/replay-record.js";
import type { SessionEntry } from "../session-entry.js";
import { ParentLink } from "../sub-agents.js";
import type { AgentStatus } from "./agent-state.js";
import { encodeEntryLines, entryIdsOf, lazyEntries, splitEntryLines } from "./lazy-entries.js";
import type { RunCursor } from "./run-cursor.js";
import type {
  ApprovalDecision,
  ApprovalRecord,
  CommandRecord,
  HookDecisionRecord,
  SessionState,
} from "./session-state.js";
import { indexEntryIds, type SessionTree } from "./session-tree.js";

/**
 * Version of the encoded fold. Contract: raised whenever `SessionState`'s shape or what any reducer
 * folds into it changes, so a snapshot made by an older fold is never used (it is stale, and the
 * load folds the log instead).
 */
export const SESSION_FOLD_FORMAT = 4;

/** An `ApprovalDecision` without its `undefined` fields. */
interface EncodedDecision {
  approved: boolean;
  outcome: ApprovalDecision["outcome"];
  reason?: string;
  editedArgs?: unknown;
}

/** `SessionState` as JSON: Maps and Sets as arrays, `undefined` fields absent. */
export interface EncodedSessionFold {
  tree: SessionTree;
  status: Omit<AgentStatus, "pendingToolCalls" | "streamingMessage" | "errorMessage" | "runId"> & {
    errorMessage?: string;
    runId?: string;
    pendingToolCalls: string[];
    /** Absent when none, or when it is the cursor's `partial` itself (`streamingIsPartial`). */
    streamingMessage?: AgentMessage;
    streamingIsPartial: boolean;
  };
  cursor: RunCursor;
  /** `[commandId, type, outcome, events]`, in the Map's order. */
  commands: Array<[string, string, CommandRecord["outcome"], number]>;
  pendingWrites: Array<{ commandId: string; eventId: string; write: SessionWrite }>;
  /** `decision` absent until one is logged; `args` absent for a decision without a request. */
  approvals: Array<[string, { toolName: string; args?: unknown; expiresAt?: number; decision?: EncodedDecision }]>;
  /** The session's approval rules (the last `approval_rules_set`). */
  approvalRules: ApprovalRule[];
  /** `[hookDecisionKey, record]`, in the Map's order. */
  hookDecisions: Array<[string, HookDecisionRecord]>;
  /** The agent version's approval rules (the last `agent_change`). */
  agentApprovalRules: ApprovalRule[];
  compaction: {
    id: string;
    reason: CompactionReason;
    runId?: string;
    abortRequested: boolean;
    instructions?: string;
    entryId?: string;
  } | null;
  owner: { workerId: string; epoch: number } | null;
  deleting: { commandId: string; op: LifecycleOp; event?: FleetEvent } | null;
  streamDeltas: unknown[][];
  spend: {
    budget: SessionState["spend"]["budget"];
    session: SessionState["spend"]["session"];
    run: SessionState["spend"]["run"];
    days: Array<[string, SessionState["spend"]["session"]]>;
  };
  /** Absent when the session is no replay. */
  replay?: ReplayRecord;
  /** Absent when the session is no child. */
  parent?: ParentLink;
  events: number;
}

/**
 * `state` as JSON-ready data. It shares objects with `state` (the tree, the cursor, messages):
 * serialise it before `state` is folded again, or encode a `copySessionState`.
 */
export function encodeSessionFold(state: SessionState): EncodedSessionFold {
  const status = state.status;
  const streamingIsPartial =
    status.streamingMessage !== undefined &&
    state.cursor.kind === "streaming" &&
    status.streamingMessage === state.cursor.partial;
  return {
    tree: state.tree,
    status: {
      systemPrompt: status.systemPrompt,
      model: status.model,
      thinkingLevel: status.thinkingLevel,
      activeTools: status.activeTools,
      steeringMode: status.steeringMode,
      followUpMode: status.followUpMode,
      toolExecution: status.toolExecution,
      isStreaming: status.isStreaming,
      ...(status.streamingMessage !== undefined && !streamingIsPartial
        ? { streamingMessage: status.streamingMessage }
        : {}),
      streamingIsPartial,
      pendingToolCalls: [...status.pendingToolCalls],
      ...(status.errorMessage !== undefined ? { errorMessage: status.errorMessage } : {}),
      queues: status.queues,
      ...(status.runId !== undefined ? { runId: status.runId } : {}),
    },
    cursor: state.cursor,
    commands: [...state.commands].map(([id, r]) => [id, r.type, r.outcome, r.events]),
    pendingWrites: state.pendingWrites,
    approvals: [...state.approvals].map(([id, r]) => [id, approvalRecord(r)]),
    approvalRules: state.approvalRules,
    hookDecisions: [...state.hookDecisions],
    agentApprovalRules: state.agentApprovalRules,
    compaction: state.compaction,
    owner: state.owner,
    deleting: state.deleting,
    streamDeltas: state.streamDeltas,
    spend: {
      budget: state.spend.budget,
      session: state.spend.session,
      run: state.spend.run,
      days: [...state.spend.days],
    },
    ...(state.replay ? { replay: state.replay } : {}),
    ...(state.parent ? { parent: state.parent } : {}),
    events: state.events,
  };
}

/** `record` without its `undefined` fields. */
function approvalRecord(r: ApprovalRecord): EncodedSessionFold["approvals"][number][1] {
  const out: EncodedSessionFold["approvals"][number][1] = { toolName: r.toolName };
  if (r.args !== undefined) out.args = r.args;
  if (r.expiresAt !== undefined) out.expiresAt = r.expiresAt;
  if (r.decision) out.decision = decisionOf(r.decision);
  return out;
}

// The decoder checks the shape of what it rebuilds; entries, messages and events are taken as the
// fold wrote them (the envelope's checksum guards the bytes, the format version their meaning).
const Json = z.unknown();
const Spend = z.looseObject({});
const CURSOR_KINDS = [
  "idle",
  "run_started",
  "awaiting_llm",
  "streaming",
  "tools_pending",
  "awaiting_turn_end",
  "between_turns",
] as const;
const EncodedFold = z.object({
  tree: z.object({
    sessionId: z.string().nullable(),
    config: z.looseObject({}).nullable(),
    forkedFrom: z.object({ sessionId: z.string(), entryId: z.string() }).nullable(),
    agent: z.object({ name: z.string(), version: z.number() }).optional(),
    entries: z.array(Json),
    leafId: z.string().nullable(),
    labels: z.record(z.string(), z.string()),
    name: z.string().nullable(),
    leafEventIds: z.array(z.string()),
  }),
  status: z.object({
    systemPrompt: z.string(),
    model: z.looseObject({}).nullable(),
    thinkingLevel: z.string(),
    activeTools: z.array(z.string()).nullable(),
    steeringMode: z.string(),
    followUpMode: z.string(),
    toolExecution: z.string(),
    isStreaming: z.boolean(),
    streamingMessage: z.looseObject({}).optional(),
    streamingIsPartial: z.boolean(),
    pendingToolCalls: z.array(z.string()),
    errorMessage: z.string().optional(),
    queues: z.object({ steer: z.array(Json), followUp: z.array(Json), nextTurn: z.array(Json) }),
    runId: z.string().optional(),
  }),
  cursor: z.looseObject({ kind: z.enum(CURSOR_KINDS) }),
  commands: z.array(z.tuple([z.string(), z.string(), z.enum(["accepted", "rejected"]), z.number().int()])),
  pendingWrites: z.array(z.object({ commandId: z.string(), eventId: z.string(), write: Json })),
  approvals: z.array(
    z.tuple([
      z.string(),
      z.object({
        toolName: z.string(),
        args: Json,
        expiresAt: z.number().optional(),
        decision: z
          .object({
            approved: z.boolean(),
            outcome: z.enum(["approved", "denied", "expired"]),
            reason: z.string().optional(),
            editedArgs: Json.optional(),
          })
          .optional(),
      }),
    ]),
  ),
  approvalRules: z.array(Json),
  hookDecisions: z.array(
    z.tuple([z.string(), z.object({ output: Json.optional(), outputRef: z.looseObject({}).optional() })]),
  ),
  agentApprovalRules: z.array(Json),
  compaction: z
    .object({
      id: z.string(),
      reason: z.string(),
      runId: z.string().optional(),
      abortRequested: z.boolean(),
      instructions: z.string().optional(),
      entryId: z.string().optional(),
    })
    .nullable(),
  owner: z.object({ workerId: z.string(), epoch: z.number() }).nullable(),
  deleting: z.object({ commandId: z.string(), op: z.string(), event: z.looseObject({}).optional() }).nullable(),
  streamDeltas: z.array(z.array(Json)),
  spend: z.object({
    budget: z.looseObject({}),
    session: Spend,
    run: Spend,
    days: z.array(z.tuple([z.string(), Spend])),
  }),
  replay: ReplayRecord.optional(),
  parent: ParentLink.optional(),
  events: z.number().int().nonnegative(),
});

/**
 * The state `encodeSessionFold` was made from, rebuilt from its JSON (`JSON.parse` of its
 * serialisation). Contract: never throws; the result folds later events exactly as the original
 * would (same fields, same `undefined`s, the streaming message shared with the cursor as it was).
 * The input is not copied: hand over a freshly parsed value.
 */
export function decodeSessionFold(json: unknown): Decoded<SessionState> {
  // Shape only: zod would copy every entry and message; the parsed value itself is what is used.
  const shape = EncodedFold.safeParse(json);
  if (!shape.success) {
    const issues = shape.error.issues.map((i) => ({ path: i.path.map(String).join("."), message: i.message }));
    return { ok: false, error: issues.map((i) => `${i.path}: ${i.message}`).join("; "), issues };
  }
  const e = json as EncodedSessionFold;
  const cursor = e.cursor;
  const s = e.status;
  if (s.streamingIsPartial && cursor.kind !== "streaming") {
    const issue = { path: "status.streamingIsPartial", message: "no streaming cursor to share the message with" };
    return { ok: false, error: `${issue.path}: ${issue.message}`, issues: [issue] };
  }
  const tree = e.tree;
  const state: SessionState = {
    tree: {
      sessionId: tree.sessionId,
      config: tree.config,
      forkedFrom: tree.forkedFrom,
      ...(tree.agent ? { agent: tree.agent } : {}),
      entries: tree.entries,
      leafId: tree.leafId,
      labels: tree.labels,
      name: tree.name,
      leafEventIds: tree.leafEventIds,
    },
    status: {
      systemPrompt: s.systemPrompt,
      model: s.model,
      thinkingLevel: s.thinkingLevel,
      activeTools: s.activeTools,
      steeringMode: s.steeringMode,
      followUpMode: s.followUpMode,
      toolExecution: s.toolExecution,
      isStreaming: s.isStreaming,
      streamingMessage: s.streamingIsPartial && cursor.kind === "streaming" ? cursor.partial : s.streamingMessage,
      pendingToolCalls: new Set(s.pendingToolCalls),
      errorMessage: s.errorMessage,
      queues: s.queues,
      runId: s.runId,
    },
    cursor,
    commands: new Map(e.commands.map(([id, type, outcome, events]) => [id, { type, outcome, events }])),
    pendingWrites: e.pendingWrites,
    approvalRules: e.approvalRules,
    hookDecisions: new Map(e.hookDecisions),
    agentApprovalRules: e.agentApprovalRules,
    approvals: new Map(
      e.approvals.map(([id, r]) => [
        id,
        {
          toolName: r.toolName,
          args: r.args,
          ...(r.expiresAt !== undefined ? { expiresAt: r.expiresAt } : {}),
          decision: r.decision ? decisionOf(r.decision) : undefined,
        },
      ]),
    ),
    compaction: e.compaction
      ? {
          id: e.compaction.id,
          reason: e.compaction.reason,
          runId: e.compaction.runId,
          abortRequested: e.compaction.abortRequested,
          instructions: e.compaction.instructions,
          entryId: e.compaction.entryId,
        }
      : null,
    owner: e.owner,
    deleting: e.deleting
      ? { commandId: e.deleting.commandId, op: e.deleting.op, event: deletingEvent(e.deleting) }
      : null,
    streamDeltas: e.streamDeltas as SessionState["streamDeltas"],
    spend: {
      budget: e.spend.budget,
      session: e.spend.session,
      run: e.spend.run,
      days: new Map(e.spend.days),
    },
    replay: e.replay ?? null,
    parent: e.parent ?? null,
    events: e.events,
  };
  return { ok: true, value: state };
}

/** `encodeSessionFold` with the tree's entries apart: `fold.tree.entries` is empty. */
export interface SessionFoldApart {
  fold: EncodedSessionFold;
  /** Each entry's id, in order. */
  entryIds: string[];
  /** The entries as JSON lines (`encodeEntryLines`). */
  entryLines: Uint8Array;
}

/**
 * `encodeSessionFold(state)` with the tree's entries apart, as JSON lines, so that a reader can
 * parse an entry only when it reads it (`decodeSessionFoldApart`). The stored lines of a fold read
 * back that way are copied as they are (never parsed or serialised again). Same sharing rule as
 * `encodeSessionFold`: serialise `fold` before `state` is folded again.
 */
export function encodeSessionFoldApart(state: SessionState): SessionFoldApart {
  const fold = encodeSessionFold(state);
  const entries = fold.tree.entries;
  return {
    fold: { ...fold, tree: { ...fold.tree, entries: [] } },
    entryIds: entryIdsOf(entries),
    entryLines: encodeEntryLines(entries),
  };
}

/**
 * The state `encodeSessionFoldApart` was made from: `json` is its `fold` (parsed), `ids` its
 * `entryIds` (parsed), `lines` its `entryLines`. Same contract as `decodeSessionFold`, and the
 * tree's entries are a lazy list (`lazyEntries`): no entry is parsed until read, id lookups parse
 * none, and reading entry i gives what `JSON.parse` of its line gives. Checks the line count, not
 * each line: a checksum over `lines` is the caller's.
 */
export function decodeSessionFoldApart(json: unknown, ids: unknown, lines: Uint8Array): Decoded<SessionState> {
  // A plain check: zod would visit each of tens of thousands of ids through its machinery.
  if (!Array.isArray(ids) || !ids.every((id) => typeof id === "string")) {
    return failed("entryIds", "expected an array of strings");
  }
  const split = splitEntryLines(lines, ids);
  if (!split.ok) return failed("entryLines", split.error);
  const fold = json as { tree?: { entries?: unknown } } | null;
  if (!Array.isArray(fold?.tree?.entries) || fold.tree.entries.length > 0) {
    return failed("tree.entries", "expected no entries beside the entry lines");
  }
  const decoded = decodeSessionFold(json);
  if (!decoded.ok) return decoded;
  const entries: SessionEntry[] = lazyEntries(split.lines);
  indexEntryIds(entries, ids);
  decoded.value.tree.entries = entries;
  return decoded;
}

function failed(path: string, message: string): Decoded<never> {
  const issue = { path, message };
  return { ok: false, error: `${path}: ${message}`, issues: [issue] };
}

/** The decision as `foldRecords` makes it: `reason` and `editedArgs` only when given. */
const decisionOf = (d: {
  approved: boolean;
  outcome: ApprovalDecision["outcome"];
  reason?: string | undefined;
  editedArgs?: unknown;
}): EncodedDecision => ({
  approved: d.approved,
  outcome: d.outcome,
  ...(d.reason !== undefined ? { reason: d.reason } : {}),
  ...(d.editedArgs !== undefined ? { editedArgs: d.editedArgs } : {}),
});

const deletingEvent = (d: NonNullable<EncodedSessionFold["deleting"]>) =>
  d.event as NonNullable<SessionState["deleting"]>["event"];
