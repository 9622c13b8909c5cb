// The one fold of a session for its single writer (the loop worker that owns it): the tree, pi's
// agent status, the run cursor, and everything the log says is still to be done.

import type { ApprovalRule } from "../approval-rules.js";
import type { StreamDelta } from "../assistant-stream.js";
import type { BlobRef } from "../blob-ref.js";
import type { CompactionReason, EventOf, FleetEvent, SessionWrite } from "../events.js";
import { hookDecisionKey } from "../hook-decision.js";
import type { LifecycleOp } from "../lifecycle.js";
import type { AssistantMessage } from "../messages.js";
import type { ReplayRecord } from "../replay/replay-record.js";
import type { ParentLink } from "../sub-agents.js";
import { AGENT_STATUS_EVENT_TYPES, type AgentStatus, applyAgentStatus, initialAgentStatus } from "./agent-state.js";
import { applyDeltas } from "./apply-deltas.js";
import { copyEntries } from "./lazy-entries.js";
import {
  advanceRunCursor,
  advanceRunCursorPastWrite,
  copyRunCursor,
  idleRunCursor,
  RUN_CURSOR_EVENT_TYPES,
  type RunCursor,
} from "./run-cursor.js";
import {
  foldSessionSpend,
  initialSessionSpend,
  SESSION_SPEND_EVENT_TYPES,
  type SessionSpend,
} from "./session-spend.js";
import {
  emptySessionTree,
  foldSessionTreeInPlace,
  SESSION_TREE_EVENT_TYPES,
  type SessionTree,
} from "./session-tree.js";

/** A `pending_write` not yet settled by its flush (see `PendingWriteEvent`). */
export interface PendingWrite {
  commandId: string;
  /** `meta.id` of the event that will create the write's entry. */
  eventId: string;
  write: SessionWrite;
}

/** What the log holds of one command. */
export interface CommandRecord {
  type: string;
  outcome: "accepted" | "rejected";
  /** Events with this `meta.commandId` (the acceptance's own events after `command_accepted`). */
  events: number;
}

/** A tool call that asked for a person's approval, and the decision once one is logged. */
export interface ApprovalRecord {
  toolName: string;
  args: unknown;
  /** From the request: when it expires (ms since the epoch; absent: never). */
  expiresAt?: number | undefined;
  decision: ApprovalDecision | undefined;
}

/** The first `tool_approval_resolved` of a call. */
export interface ApprovalDecision {
  approved: boolean;
  outcome: "approved" | "denied" | "expired";
  reason?: string | undefined;
  /** Approved with these arguments instead of the model's. */
  editedArgs?: unknown;
}

/** A named hook server's recorded answer (`hook_decision`): inline, or by reference in `fleet_blobs`. */
export interface HookDecisionRecord {
  output?: unknown;
  outputRef?: BlobRef | undefined;
}

/**
 * A deletion in progress, from its command's `command_accepted` on: the command, and its
 * `session_deleting` tombstone once appended (`undefined` when a crash came between the two).
 */
export interface Deletion {
  commandId: string;
  op: LifecycleOp;
  event: EventOf<"session_deleting"> | undefined;
}

/** The commands that delete a session, and the operation of each. */
const DELETING_COMMANDS: Readonly<Record<string, LifecycleOp>> = {
  delete_session: "delete",
  archive_session: "archive",
};

/** A compaction between `compaction_start` and `compaction_end`. */
export interface OpenCompaction {
  /** `meta.id` of its `compaction_start`. */
  id: string;
  reason: CompactionReason;
  /** The run it belongs to (automatic compaction inside a run); `undefined` for a standalone one. */
  runId: string | undefined;
  /** An `abort` was accepted while it was open. */
  abortRequested: boolean;
  /** The focus a `compact` command asked for. */
  instructions: string | undefined;
  /** The `compaction` entry it appended, once appended (then only its `compaction_end` is missing). */
  entryId: string | undefined;
}

/**
 * Everything a session's writer needs to decide, derived only from the session's events (so a new
 * owner derives the same from the log). Mutable, for a single owner: `evolveSession` updates it in
 * place, O(1) per event (the tree with `foldSessionTreeInPlace`, the status with `applyAgentStatus`,
 * the cursor with `advanceRunCursor`, the spend with `foldSessionSpend`), touching only the parts an
 * event can change. Hand out `tree`, `status` or `cursor` only to code that does not keep them across
 * a fold; `copySessionState` makes a copy that later folds do not change.
 */
export interface SessionState {
  tree: SessionTree;
  /** pi's agent status (`foldAgentStatus`): settings, queues, run id, streaming message, pending calls. */
  status: AgentStatus;
  /** Where the last run stands. Read it with `runCursorOf` while an assistant message streams. */
  cursor: RunCursor;
  /**
   * Command id → its logged outcome, and how many events its acceptance appended after the outcome
   * (`meta.commandId`). A command id is handled once for the session's whole life.
   */
  commands: Map<string, CommandRecord>;
  /** Writes accepted during a run or compaction and not flushed yet, in acceptance order. */
  pendingWrites: PendingWrite[];
  /** Tool call id → approval request and decision. */
  approvals: Map<string, ApprovalRecord>;
  /** The session's approval rules (the last `approval_rules_set`; empty: none). */
  approvalRules: ApprovalRule[];
  /**
   * The open (or last) run's `hook_decision`s by `hookDecisionKey`; cleared at `agent_start`, so it
   * holds one run's decisions at most.
   */
  hookDecisions: Map<string, HookDecisionRecord>;
  /** The approval rules of the agent version the session runs (its last `agent_change`; empty: none). */
  agentApprovalRules: ApprovalRule[];
  compaction: OpenCompaction | null;
  /** The last `owner_change`. */
  owner: { workerId: string; epoch: number } | null;
  /** A deletion or archive accepted for the session (never undone: the session's log goes). */
  deleting: Deletion | null;
  /** `message_update` deltas not yet applied to the cursor and the streaming message (applied on read). */
  streamDeltas: StreamDelta[][];
  /** Tokens and cost spent per run, session and UTC day, and the budget in force. */
  spend: SessionSpend;
  /** What the session replays (the first `session_created`'s `replayOf`; change 51); `null`: no replay. */
  replay: ReplayRecord | null;
  /** The parent that started this session (the first `session_created`'s `parent`; change 57); `null`: none. */
  parent: ParentLink | null;
  /** Events folded. */
  events: number;
}

export function initialSessionState(): SessionState {
  return {
    tree: emptySessionTree(),
    status: initialAgentStatus(),
    cursor: idleRunCursor(),
    commands: new Map(),
    pendingWrites: [],
    approvals: new Map(),
    approvalRules: [],
    hookDecisions: new Map(),
    agentApprovalRules: [],
    compaction: null,
    owner: null,
    deleting: null,
    streamDeltas: [],
    spend: initialSessionSpend(),
    replay: null,
    parent: null,
    events: 0,
  };
}

/** The parts of the state an event type can change (bits of `PARTS_OF`). */
const TREE = 1;
const STATUS = 2;
const CURSOR = 4;
const SPEND = 8;
/** Commands, pending writes, approvals, the open compaction and the owner. */
const RECORDS = 16;
const RECORD_EVENT_TYPES: readonly FleetEvent["type"][] = [
  "command_accepted",
  "command_rejected",
  "pending_write",
  "tool_approval_requested",
  "tool_approval_resolved",
  "approval_rules_set",
  "hook_decision",
  "agent_start",
  "agent_change",
  "compaction_start",
  "compaction",
  "compaction_end",
  "owner_change",
  "session_deleting",
];

/** Event type → the parts it can change, from each part's own list of the events it folds. */
const PARTS_OF: ReadonlyMap<string, number> = (() => {
  const parts = new Map<string, number>();
  const mark = (types: Iterable<string>, bit: number) => {
    for (const type of types) parts.set(type, (parts.get(type) ?? 0) | bit);
  };
  mark(SESSION_TREE_EVENT_TYPES, TREE);
  mark(AGENT_STATUS_EVENT_TYPES, STATUS);
  mark(RUN_CURSOR_EVENT_TYPES, CURSOR);
  mark(SESSION_SPEND_EVENT_TYPES, SPEND);
  mark(RECORD_EVENT_TYPES, RECORDS);
  return parts;
})();

/**
 * Applies one event in place, to the parts of the state it can change. Redelivered events change
 * nothing that the tree's id checks cover; the single writer never folds an event twice.
 * Contract: never throws. `message_update` costs O(1): its deltas are applied only when the partial
 * message is read (`runCursorOf`, `streamingMessageOf`) or the next event is folded, and dropped
 * when `message_end` replaces the message.
 */
export function evolveSession(state: SessionState, event: FleetEvent): void {
  state.events++;
  const commandId = event.meta.commandId;
  if (commandId !== undefined) {
    const byCommand = state.commands.get(commandId);
    if (byCommand) byCommand.events++;
  }
  const type = event.type;
  if (type === "message_update") {
    if (state.cursor.kind === "streaming") state.streamDeltas.push(event.deltas);
    return;
  }
  if (state.streamDeltas.length > 0) {
    if (type === "message_end" || type === "agent_start") state.streamDeltas = [];
    else settleStream(state);
  }
  const parts = PARTS_OF.get(type) ?? 0;
  if (type === "session_created" && !state.tree.config) {
    if (event.replayOf) state.replay = event.replayOf;
    if (event.parent) state.parent = event.parent;
  }
  if (parts & TREE) foldSessionTreeInPlace(state.tree, event);
  if (parts & STATUS) applyAgentStatus(state.status, event);
  // The pending write this event carries out, if any (`foldRecords` only appends to the list, so
  // the index stays valid until the splice below).
  const settled = state.pendingWrites.length > 0 ? settledWriteIndex(state.pendingWrites, event.meta.id) : -1;
  if (parts & CURSOR) {
    if (settled >= 0 && type === "message_end") {
      state.cursor = advanceRunCursorPastWrite(state.cursor);
    } else {
      state.cursor = advanceRunCursor(state.cursor, event);
    }
  }
  if (parts & SPEND) foldSessionSpend(state.spend, event);
  if (parts & RECORDS) foldRecords(state, event);
  if (settled >= 0) state.pendingWrites.splice(settled, 1);
}

/** The index of the pending write that named `eventId` as the event carrying it out, or -1. */
function settledWriteIndex(writes: readonly PendingWrite[], eventId: string): number {
  for (let i = 0; i < writes.length; i++) if ((writes[i] as PendingWrite).eventId === eventId) return i;
  return -1;
}

/** Commands, pending writes, approvals, the open compaction and the owner. */
function foldRecords(state: SessionState, event: FleetEvent): void {
  switch (event.type) {
    case "command_accepted":
      if (!state.commands.has(event.commandId)) {
        state.commands.set(event.commandId, { type: event.commandType, outcome: "accepted", events: 0 });
      }
      if (event.commandType === "abort" && state.compaction && !state.compaction.runId) {
        state.compaction.abortRequested = true;
      }
      {
        const op = DELETING_COMMANDS[event.commandType];
        if (op && !state.deleting) state.deleting = { commandId: event.commandId, op, event: undefined };
      }
      break;
    case "command_rejected":
      if (!state.commands.has(event.commandId)) {
        state.commands.set(event.commandId, { type: event.commandType, outcome: "rejected", events: 0 });
      }
      break;
    case "pending_write":
      state.pendingWrites.push({ commandId: event.commandId, eventId: event.eventId, write: event.write });
      break;
    case "tool_approval_requested":
      if (!state.approvals.has(event.toolCallId)) {
        state.approvals.set(event.toolCallId, {
          toolName: event.toolName,
          args: event.args,
          ...(event.expiresAt !== undefined ? { expiresAt: event.expiresAt } : {}),
          decision: undefined,
        });
      }
      break;
    case "tool_approval_resolved": {
      const record = state.approvals.get(event.toolCallId);
      const decision: ApprovalDecision = {
        approved: event.approved,
        outcome: event.outcome ?? (event.approved ? "approved" : "denied"),
        ...(event.reason !== undefined ? { reason: event.reason } : {}),
        ...(event.editedArgs !== undefined ? { editedArgs: event.editedArgs } : {}),
      };
      if (record) record.decision ??= decision;
      else state.approvals.set(event.toolCallId, { toolName: "", args: undefined, decision });
      break;
    }
    case "approval_rules_set":
      state.approvalRules = event.rules;
      break;
    case "agent_start":
      if (state.hookDecisions.size > 0) state.hookDecisions = new Map();
      break;
    case "hook_decision": {
      const key = hookDecisionKey(event.hook, event.server, event.inputHash);
      if (!state.hookDecisions.has(key)) {
        state.hookDecisions.set(
          key,
          event.outputRef !== undefined ? { outputRef: event.outputRef } : { output: event.output },
        );
      }
      break;
    }
    case "agent_change":
      state.agentApprovalRules = event.approvalRules ?? [];
      break;
    case "compaction_start":
      state.compaction = {
        id: event.meta.id,
        reason: event.reason,
        runId: state.status.runId,
        abortRequested: false,
        instructions: event.instructions,
        entryId: undefined,
      };
      break;
    case "compaction":
      if (state.compaction) state.compaction.entryId = event.entry.id;
      break;
    case "compaction_end":
      state.compaction = null;
      break;
    case "owner_change":
      state.owner = { workerId: event.workerId, epoch: event.epoch };
      break;
    case "session_deleting":
      if (!state.deleting) state.deleting = { commandId: event.meta.commandId ?? "", op: event.op, event };
      else state.deleting.event ??= event;
      break;
  }
}

/**
 * A copy of `state` that folding either one never changes: what the fold modifies in place is copied
 * (the tree's lists and labels, the status object, the cursor and its lists, the records, the spend
 * record); the entries, messages and delta batches (never modified once created) are shared.
 */
export function copySessionState(state: SessionState): SessionState {
  return {
    ...state,
    tree: {
      ...state.tree,
      entries: copyEntries(state.tree.entries),
      labels: { ...state.tree.labels },
      leafEventIds: state.tree.leafEventIds.slice(),
    },
    status: { ...state.status },
    cursor: copyRunCursor(state.cursor),
    commands: new Map([...state.commands].map(([id, record]) => [id, { ...record }])),
    approvals: new Map([...state.approvals].map(([id, record]) => [id, { ...record }])),
    hookDecisions: new Map(state.hookDecisions),
    pendingWrites: state.pendingWrites.slice(),
    compaction: state.compaction ? { ...state.compaction } : null,
    deleting: state.deleting ? { ...state.deleting } : null,
    streamDeltas: state.streamDeltas.slice(),
    spend: {
      budget: state.spend.budget,
      session: { ...state.spend.session },
      run: { ...state.spend.run },
      days: new Map([...state.spend.days].map(([day, spent]) => [day, { ...spent }])),
    },
  };
}

/** Folds `events` in order from `state` (default: the initial state), in place. */
export function foldSessionEvents(events: Iterable<FleetEvent>, state = initialSessionState()): SessionState {
  for (const event of events) evolveSession(state, event);
  return state;
}

/**
 * Applies buffered `message_update` deltas to the cursor and the streaming message: once, when both
 * hold the same message (they do from its `message_start`).
 */
function settleStream(state: SessionState): void {
  const buffered = state.streamDeltas;
  if (buffered.length === 0) return;
  const deltas = buffered.length === 1 ? (buffered[0] as StreamDelta[]) : buffered.flat();
  state.streamDeltas = [];
  const cursor = state.cursor;
  const streaming = state.status.streamingMessage;
  let settled: AssistantMessage | undefined;
  if (cursor.kind === "streaming") {
    const before = cursor.partial;
    cursor.partial = applyDeltas(before, deltas);
    if (streaming === before) settled = cursor.partial;
  }
  if (streaming?.role === "assistant") state.status.streamingMessage = settled ?? applyDeltas(streaming, deltas);
}

/** The run cursor with every streamed delta applied. */
export function runCursorOf(state: SessionState): RunCursor {
  settleStream(state);
  return state.cursor;
}

/** pi's `streamingMessage`, with every streamed delta applied. */
export function streamingMessageOf(state: SessionState): AgentStatus["streamingMessage"] {
  settleStream(state);
  return state.status.streamingMessage;
}

/**
 * The id to stamp as `meta.runId` on an event appended now: the open run's, else an open standalone
 * compaction's (its `compaction_start` id); `undefined` when nothing is open. See `EventMeta`.
 */
export function openOperationId(state: SessionState): string | undefined {
  return state.status.runId ?? state.compaction?.id;
}

/** What the session is doing, as the log says: the states a command is decided in. */
export type SessionActivity =
  | "none"
  | "idle"
  | "compacting"
  | "streaming"
  | "tools_pending"
  | "awaiting_approval"
  | "running";

/**
 * - `none`: no `session_created` yet;
 * - `compacting`: a compaction is open (inside a run or not);
 * - `awaiting_approval`: a tool call waits for a person's decision;
 * - `tools_pending`: tool calls of the last assistant message have not all ended;
 * - `streaming`: an assistant message has started and not ended;
 * - `running`: a run is open at any other position (between turns, before the first LLM call);
 * - `idle`: none of the above.
 */
export function sessionActivity(state: SessionState): SessionActivity {
  if (!state.tree.config) return "none";
  if (state.compaction) return "compacting";
  const cursor = state.cursor;
  switch (cursor.kind) {
    case "idle":
      return "idle";
    case "streaming":
      return "streaming";
    case "tools_pending":
      return cursor.awaitingApprovalIds.some((id) => !state.approvals.get(id)?.decision)
        ? "awaiting_approval"
        : "tools_pending";
    default:
      return "running";
  }
}
