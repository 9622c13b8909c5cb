import { z } from "zod";
import { StreamDelta } from "./assistant-stream.js";
import { type ModelRef, QueueMode, SessionConfig, ToolExecutionMode } from "./config.js";
import { ToolResultContentBlock } from "./content.js";
import { EventId, SessionId, ToolName } from "./ids.js";
import { AgentMessage, AssistantMessage, ThinkingLevel, ToolResultMessage } from "./messages.js";

/** On every event. `runId` is present on every event from `agent_start` through `agent_end` of a run. */
export const EventMeta = z.object({
  v: z.literal(1),
  id: EventId,
  sessionId: SessionId,
  ts: z.number().int().nonnegative(),
  runId: EventId.optional(),
  producer: z.string().min(1),
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

export const RejectionCode = z.enum(["invalid", "unsupported", "busy", "not_found", "conflict"]);
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
});
export const CommandAcceptedEvent = ev("command_accepted", { commandId: z.string().min(1), commandType: z.string() });
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
});
export const ModelChangeEvent = entryEv("model_change", { provider: z.string().min(1), modelId: z.string().min(1) });
export const ThinkingLevelChangeEvent = entryEv("thinking_level_change", { thinkingLevel: ThinkingLevel });
export const ActiveToolsChangeEvent = entryEv("active_tools_change", { toolNames: z.array(ToolName) });
export const CompactionEvent = entryEv("compaction", {
  summary: z.string(),
  firstKeptEntryId: EventId,
  tokensBefore: z.number().nonnegative(),
  details: z.unknown().optional(),
});
export const BranchSummaryEvent = entryEv("branch_summary", { fromId: z.string().min(1), summary: z.string() });
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
});
/** Fleet addition: a person's decision on a `tool_approval_requested` call; survives crashes. */
export const ToolApprovalResolvedEvent = ev("tool_approval_resolved", {
  toolCallId: z.string().min(1),
  approved: z.boolean(),
  reason: z.string().optional(),
});
export const ToolApprovalRequestedEvent = ev("tool_approval_requested", {
  toolCallId: z.string().min(1),
  toolName: z.string().min(1),
  args: z.unknown(),
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
  ConfigChangeEvent,
]);
export type FleetEvent = z.infer<typeof FleetEvent>;
export type FleetEventType = FleetEvent["type"];
export type EventOf<T extends FleetEventType> = Extract<FleetEvent, { type: T }>;

/** An event before the producer stamps `meta` (what the engine emits). */
export type EventBody<E extends FleetEvent = FleetEvent> = E extends FleetEvent ? Omit<E, "meta"> : never;

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
