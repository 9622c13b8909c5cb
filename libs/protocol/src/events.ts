import { z } from "zod";
import { SessionAgent } from "./agents.js";
import { ApprovalRules, ApprovalScope } from "./approval-rules.js";
import { StreamDelta } from "./assistant-stream.js";
import { BlobRef } from "./blob-ref.js";
import { DaySpend, SessionBudget } from "./budget.js";
import { CompactionSettings, type ModelRef, QueueMode, SessionConfig, ToolExecutionMode } from "./config.js";
import { ToolResultContentBlock } from "./content.js";
import { HookInputHash, HookServerName, RemoteHookName } from "./hook-decision.js";
import { EventId, SessionId, ToolName } from "./ids.js";
import { ArchiveRef, LifecycleOp, Requester } from "./lifecycle.js";
import { AgentMessage, AssistantMessage, ThinkingLevel, ToolResultMessage, Usage } from "./messages.js";
import { ReplayRecord } from "./replay/replay-record.js";
import { ParentLink } from "./sub-agents.js";
import { TraceContext } from "./trace/trace-context.js";

/**
 * On every event. `runId` is on every event appended while a run is open, from its `agent_start`
 * through its `agent_end`, whatever caused the event (a command accepted mid-run, an ownership
 * change): so a session whose last event carries a `runId` and is not `agent_end` has an open run.
 */
export const EventMeta = z.object({
  v: z.literal(1),
  id: EventId,
  sessionId: SessionId,
  ts: z.number().int().nonnegative(),
  runId: EventId.optional(),
  producer: z.string().min(1),
  /**
   * On the events a command's acceptance appended after its `command_accepted` (a queue update, a
   * pending write, an approval decision, a compaction start, a leaf move, the entries of a fork or
   * an import): a worker that gets the command again counts them and appends only what is missing.
   */
  commandId: z.string().min(1).max(256).optional(),
});
export type EventMeta = z.infer<typeof EventMeta>;

/**
 * The tree entry an event creates. `id` equals `meta.id`; `parentId` is the leaf at the moment the
 * event was decided (`null` for the first entry).
 */
export const EntryRef = z.object({ id: EventId, parentId: EventId.nullable() });
export type EntryRef = z.infer<typeof EntryRef>;

export const ToolExecutionResult = z.object({
  content: z.array(ToolResultContentBlock),
  details: z.unknown().optional(),
  terminate: z.boolean().optional(),
});
export type ToolExecutionResult = z.infer<typeof ToolExecutionResult>;

export const RejectionCode = z.enum(["invalid", "unsupported", "busy", "not_found", "conflict", "budget_exceeded"]);
export type RejectionCode = z.infer<typeof RejectionCode>;

const ev = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) =>
  z.object({ type: z.literal(type), ...shape, meta: EventMeta });
const entryEv = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) =>
  z.object({ type: z.literal(type), ...shape, entry: EntryRef, meta: EventMeta });

// pi's agent events (message_update carries coalesced deltas only).
export const AgentStartEvent = ev("agent_start", {});
export const TurnStartEvent = ev("turn_start", {});
export const MessageStartEvent = ev("message_start", { message: AgentMessage });
export const MessageUpdateEvent = ev("message_update", { deltas: z.array(StreamDelta).min(1) });
export const MessageEndEvent = entryEv("message_end", { message: AgentMessage });
export const ToolExecutionStartEvent = ev("tool_execution_start", {
  toolCallId: z.string().min(1),
  toolName: z.string().min(1),
  args: z.unknown(),
});
export const ToolExecutionUpdateEvent = ev("tool_execution_update", {
  toolCallId: z.string().min(1),
  toolName: z.string().min(1),
  args: z.unknown(),
  partialResult: z.unknown(),
});
export const ToolExecutionEndEvent = ev("tool_execution_end", {
  toolCallId: z.string().min(1),
  toolName: z.string().min(1),
  result: ToolExecutionResult,
  isError: z.boolean(),
});
export const TurnEndEvent = ev("turn_end", { message: AssistantMessage, toolResults: z.array(ToolResultMessage) });
export const AgentEndEvent = ev("agent_end", { messages: z.array(AgentMessage) });

// Session events.
export const SessionCreatedEvent = ev("session_created", {
  config: SessionConfig,
  forkedFrom: z.object({ sessionId: SessionId, entryId: EventId }).optional(),
  /**
   * A replay session (change 51, the `replay` command): the source, the overrides, the tools mode,
   * the user messages to run again and the recorded tool results. The loop runs the turns itself.
   */
  replayOf: ReplayRecord.optional(),
  /** The agent version the session was created from (change 54); absent: none. */
  agent: SessionAgent.optional(),
  /** A child session (change 57): the parent's session, run and `agent` call that started it. */
  parent: ParentLink.optional(),
});
export const CommandAcceptedEvent = ev("command_accepted", {
  commandId: z.string().min(1),
  commandType: z.string(),
  /**
   * On a command that starts a run with input (`prompt`, `append_message` with `triggerTurn`): the
   * messages the run delivers after its `turn_start`. A worker that takes the run over before their
   * `message_start` delivers them from here.
   */
  messages: z.array(AgentMessage).optional(),
  /**
   * The W3C trace context the command carried (change 46): the spans derived from the log for what
   * the command caused (the run it starts) join that trace.
   */
  trace: TraceContext.optional(),
});
export const CommandRejectedEvent = ev("command_rejected", {
  commandId: z.string().min(1),
  commandType: z.string(),
  code: RejectionCode,
  reason: z.string(),
});
export const QueueUpdateEvent = ev("queue_update", {
  steer: z.array(AgentMessage),
  followUp: z.array(AgentMessage),
  nextTurn: z.array(AgentMessage),
  /**
   * On a run's drain: the messages this update takes off the queues to deliver now, in order; their
   * `message_start`s follow. A worker that takes the run over before them delivers them from here.
   */
  delivering: z.array(AgentMessage).optional(),
});
export const ModelChangeEvent = entryEv("model_change", { provider: z.string().min(1), modelId: z.string().min(1) });
export const ThinkingLevelChangeEvent = entryEv("thinking_level_change", { thinkingLevel: ThinkingLevel });
export const ActiveToolsChangeEvent = entryEv("active_tools_change", { toolNames: z.array(ToolName) });
/**
 * Fleet addition to pi's summary entries: `usage`, what the LLM calls that made the summary spent
 * (the session's spend counts it; a pi JSONL export leaves it out).
 */
export const CompactionEvent = entryEv("compaction", {
  summary: z.string(),
  firstKeptEntryId: EventId,
  tokensBefore: z.number().nonnegative(),
  details: z.unknown().optional(),
  usage: Usage.optional(),
});
export const BranchSummaryEvent = entryEv("branch_summary", {
  fromId: z.string().min(1),
  summary: z.string(),
  usage: Usage.optional(),
});
export const LabelEvent = entryEv("label", { targetId: EventId, label: z.string().nullable() });
export const SessionInfoEvent = entryEv("session_info", { name: z.string() });
export const CustomEvent = entryEv("custom", { customType: z.string().min(1), data: z.unknown() });
export const LeafEvent = ev("leaf", { targetId: EventId.nullable() });
export const OwnerChangeEvent = ev("owner_change", {
  workerId: z.string().min(1),
  partition: z.number().int().nonnegative(),
  epoch: z.number().int().nonnegative(),
});
export const RunResumedEvent = ev("run_resumed", { runId: EventId, reason: z.string() });
/**
 * Fleet addition: settings that are not tree entries (`configure`), so the fold sees them.
 * Fields present replace the session's config fields.
 */
export const ConfigChangeEvent = ev("config_change", {
  systemPrompt: z.string().optional(),
  steeringMode: QueueMode.optional(),
  followUpMode: QueueMode.optional(),
  toolExecution: ToolExecutionMode.optional(),
  /** The whole compaction settings (`set_compaction_settings`, `configure {compaction}`). */
  compaction: CompactionSettings.optional(),
});
/** Fleet addition: the session's budget from now on (`set_budget`; replaces `config.budget` whole). */
export const BudgetChangeEvent = ev("budget_change", { budget: SessionBudget });
/**
 * Fleet addition: the decision on a `tool_approval_requested` call; survives crashes. The first one
 * logged for a call is its decision. `outcome` (absent in logs written before it: `approved` or
 * `denied` by `approved`) tells an expiry (`expired`, `approved: false`, appended by the loop when
 * the request's `expiresAt` passed) from a person's denial. `editedArgs`: approved with these
 * arguments instead of the model's; the tool runs with them.
 */
export const ToolApprovalResolvedEvent = ev("tool_approval_resolved", {
  toolCallId: z.string().min(1),
  approved: z.boolean(),
  reason: z.string().optional(),
  outcome: z.enum(["approved", "denied", "expired"]).optional(),
  editedArgs: z.unknown().optional(),
});
/** Fleet addition: the session's approval rules from now on (`set_approval_rules`; replaces them whole). */
export const ApprovalRulesSetEvent = ev("approval_rules_set", { rules: ApprovalRules });
/**
 * Fleet addition (change 54): the session runs `agent` from here on (after `session_created {agent}`
 * when the version has approval rules; `set_agent`, carried out at a turn boundary). Fields present
 * replace the session's: `systemPrompt` and `compaction` as `config_change`, `budget` as
 * `budget_change`. `approvalRules` are the version's (scope `agent_version`; absent: none), apart
 * from the session's own. The version's model, thinking level and active tools are their own entries
 * just before it.
 */
const agentChange = {
  agent: SessionAgent,
  systemPrompt: z.string().optional(),
  compaction: CompactionSettings.optional(),
  budget: SessionBudget.optional(),
  approvalRules: ApprovalRules.optional(),
};
export const AgentChangeEvent = ev("agent_change", agentChange);
/**
 * A session write (settings, label, name, custom entry, message) that arrives while a run (or a
 * compaction) is in progress. pi defers such writes to the next flush point; Fleet records them at
 * acceptance, so a write accepted mid-run is in the log even if the worker dies before the flush.
 */
export const SessionWrite = z.discriminatedUnion("type", [
  z.object({ type: z.literal("model_change"), provider: z.string().min(1), modelId: z.string().min(1) }),
  z.object({ type: z.literal("thinking_level_change"), thinkingLevel: ThinkingLevel }),
  z.object({ type: z.literal("active_tools_change"), toolNames: z.array(ToolName) }),
  z.object({ type: z.literal("label"), targetId: EventId, label: z.string().nullable() }),
  z.object({ type: z.literal("session_info"), name: z.string() }),
  z.object({ type: z.literal("custom"), customType: z.string().min(1), data: z.unknown() }),
  /** A message appended to the transcript outside the queues: `message_start` + `message_end`. */
  z.object({ type: z.literal("message"), message: AgentMessage }),
  /** A move to another agent version: one `agent_change`. */
  z.object({ type: z.literal("agent_change"), ...agentChange }),
]);
export type SessionWrite = z.infer<typeof SessionWrite>;

/**
 * Fleet addition: a write accepted during a run or a compaction, waiting for the next flush point
 * (after `turn_end`, before `agent_end`, after `compaction_end`). The flush appends the write's
 * event(s); the one that creates its entry has `meta.id = eventId`, which settles it.
 */
export const PendingWriteEvent = ev("pending_write", {
  commandId: z.string().min(1),
  write: SessionWrite,
  eventId: EventId,
});
export const CompactionReason = z.enum(["manual", "threshold", "overflow"]);
export type CompactionReason = z.infer<typeof CompactionReason>;
/**
 * pi coding-agent's event: a compaction began (the `compaction` entry and `compaction_end` follow).
 * Fleet addition: `instructions`, the focus a `compact` command asked for, so that whoever finishes
 * the compaction (a new owner after a crash) summarises with them.
 */
export const CompactionStartEvent = ev("compaction_start", {
  reason: CompactionReason,
  instructions: z.string().optional(),
});
/**
 * pi coding-agent's event: the compaction is over. On success the `compaction` entry comes just
 * before it (pi's `result`); `aborted` when it was cancelled; `errorMessage` when it failed;
 * `willRetry` when the LLM call that overflowed is retried after it.
 */
export const CompactionEndEvent = ev("compaction_end", {
  reason: CompactionReason,
  aborted: z.boolean(),
  willRetry: z.boolean(),
  errorMessage: z.string().optional(),
});
/**
 * Fleet addition: the session is being deleted (`op: delete`) or archived and then deleted
 * (`archive`), by the `delete_session` / `archive_session` command of `meta.commandId`. It follows
 * that command's `command_accepted` and is the last event the session gets: the deletion's durable
 * record, which whoever next owns the session resumes from. `spend` is the session's spend per UTC
 * day, which the deletion rolls into the tenant's ledger; `events` how many events the session had;
 * `archive` is where an archive is written. The session store removes the session's projection when
 * it applies this event.
 */
export const SessionDeletingEvent = ev("session_deleting", {
  op: LifecycleOp,
  by: Requester,
  events: z.number().int().nonnegative(),
  spend: z.array(DaySpend),
  archive: ArchiveRef.optional(),
});
/**
 * Fleet addition: a restore began (`restore_session` of `meta.commandId`, just after its
 * `command_accepted`): the archived events follow it as they were, then `session_restored`.
 */
export const SessionRestoringEvent = ev("session_restoring", { by: Requester, archive: ArchiveRef });
/**
 * Fleet addition: the last event of a restore (`restore_session` of `meta.commandId`): the `events`
 * archived events before it are back on the session's subject, with their own ids and timestamps.
 */
export const SessionRestoredEvent = ev("session_restored", {
  archive: ArchiveRef,
  events: z.number().int().nonnegative(),
});
/**
 * A tool call waits for a decision. `rule`: the approval rule that asked (absent in logs written
 * before rules); `expiresAt` (ms since the epoch): from then on the call can no longer be approved
 * and the loop appends `tool_approval_resolved {outcome: "expired"}`.
 */
export const ToolApprovalRequestedEvent = ev("tool_approval_requested", {
  toolCallId: z.string().min(1),
  toolName: z.string().min(1),
  args: z.unknown(),
  rule: z
    .object({ scope: ApprovalScope, index: z.number().int().nonnegative(), reason: z.string().optional() })
    .optional(),
  expiresAt: z.number().int().nonnegative().optional(),
});

/**
 * Fleet addition (change 53): a named hook server's answer that changed something, so that a resume
 * or a replay of the run applies it without asking again. `inputHash` identifies what the server
 * was asked (see `hookDecisionKey`); `turn` is the run's turn it was asked in (1-based). The output is
 * inline (`output`), or in `fleet_blobs` (`outputRef`) when it is large; exactly one of them is set.
 */
export const HookDecisionEvent = ev("hook_decision", {
  hook: RemoteHookName,
  server: HookServerName,
  inputHash: HookInputHash,
  turn: z.number().int().nonnegative(),
  output: z.unknown().optional(),
  outputRef: BlobRef.optional(),
});

export const FleetEvent = z.discriminatedUnion("type", [
  AgentStartEvent,
  TurnStartEvent,
  MessageStartEvent,
  MessageUpdateEvent,
  MessageEndEvent,
  ToolExecutionStartEvent,
  ToolExecutionUpdateEvent,
  ToolExecutionEndEvent,
  TurnEndEvent,
  AgentEndEvent,
  SessionCreatedEvent,
  CommandAcceptedEvent,
  CommandRejectedEvent,
  QueueUpdateEvent,
  ModelChangeEvent,
  ThinkingLevelChangeEvent,
  ActiveToolsChangeEvent,
  CompactionEvent,
  BranchSummaryEvent,
  LabelEvent,
  SessionInfoEvent,
  CustomEvent,
  LeafEvent,
  OwnerChangeEvent,
  RunResumedEvent,
  ToolApprovalRequestedEvent,
  ToolApprovalResolvedEvent,
  ApprovalRulesSetEvent,
  HookDecisionEvent,
  ConfigChangeEvent,
  BudgetChangeEvent,
  PendingWriteEvent,
  CompactionStartEvent,
  CompactionEndEvent,
  SessionDeletingEvent,
  SessionRestoringEvent,
  SessionRestoredEvent,
  AgentChangeEvent,
]);
export type FleetEvent = z.infer<typeof FleetEvent>;
export type FleetEventType = FleetEvent["type"];
export type EventOf<T extends FleetEventType> = Extract<FleetEvent, { type: T }>;

/** An event before the producer stamps `meta` (what the engine emits). */
export type EventBody<E extends FleetEvent = FleetEvent> = E extends FleetEvent ? Omit<E, "meta"> : never;

/** An event body before its `entry` is filled in (the writer sets it from the leaf when appending). */
export type EventDraft = DistributiveOmit<EventBody, "entry">;
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** The types whose events create a tree entry (and so carry `entry`). */
export const ENTRY_EVENT_TYPES = [
  "message_end",
  "model_change",
  "thinking_level_change",
  "active_tools_change",
  "compaction",
  "branch_summary",
  "label",
  "session_info",
  "custom",
] as const satisfies readonly FleetEventType[];
export type EntryEventType = (typeof ENTRY_EVENT_TYPES)[number];
export type EntryEvent = EventOf<EntryEventType>;

/** pi's ten agent event types, in union order. */
export const AGENT_EVENT_TYPES = [
  "agent_start",
  "turn_start",
  "message_start",
  "message_update",
  "message_end",
  "tool_execution_start",
  "tool_execution_update",
  "tool_execution_end",
  "turn_end",
  "agent_end",
] as const satisfies readonly FleetEventType[];

export const isEntryEvent = (event: FleetEvent): event is EntryEvent =>
  (ENTRY_EVENT_TYPES as readonly string[]).includes(event.type);

export type { ModelRef };
