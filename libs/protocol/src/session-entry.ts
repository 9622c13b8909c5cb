import { z } from "zod";
import { ToolResultContentBlock } from "./content.js";
import { EventId, ToolName } from "./ids.js";
import { AssistantMessage, ThinkingLevel, ToolResultMessage, UserMessage } from "./messages.js";

const base = { id: EventId, parentId: EventId.nullable(), timestamp: z.number().int().nonnegative() };

/**
 * A node of the session tree (pi v3 entry types plus `active_tools_change`), with `timestamp` in ms.
 * Invariant: `id` is the id of the event that created the entry.
 */
export const MessageEntry = z.object({
  type: z.literal("message"),
  ...base,
  message: z.discriminatedUnion("role", [UserMessage, AssistantMessage, ToolResultMessage]),
});
export const CustomMessageEntry = z.object({
  type: z.literal("custom_message"),
  ...base,
  customType: z.string().min(1),
  content: z.union([z.string(), z.array(ToolResultContentBlock)]),
  display: z.boolean(),
  details: z.unknown().optional(),
});
export const ModelChangeEntry = z.object({
  type: z.literal("model_change"),
  ...base,
  provider: z.string().min(1),
  modelId: z.string().min(1),
});
export const ThinkingLevelChangeEntry = z.object({
  type: z.literal("thinking_level_change"),
  ...base,
  thinkingLevel: ThinkingLevel,
});
export const ActiveToolsChangeEntry = z.object({
  type: z.literal("active_tools_change"),
  ...base,
  toolNames: z.array(ToolName),
});
export const CompactionEntry = z.object({
  type: z.literal("compaction"),
  ...base,
  summary: z.string(),
  firstKeptEntryId: EventId,
  tokensBefore: z.number().nonnegative(),
  details: z.unknown().optional(),
});
export const BranchSummaryEntry = z.object({
  type: z.literal("branch_summary"),
  ...base,
  fromId: z.string().min(1),
  summary: z.string(),
});
export const LabelEntry = z.object({
  type: z.literal("label"),
  ...base,
  targetId: EventId,
  label: z.string().nullable(),
});
export const SessionInfoEntry = z.object({ type: z.literal("session_info"), ...base, name: z.string() });
export const CustomEntry = z.object({
  type: z.literal("custom"),
  ...base,
  customType: z.string().min(1),
  data: z.unknown(),
});

export const SessionEntry = z.discriminatedUnion("type", [
  MessageEntry,
  CustomMessageEntry,
  ModelChangeEntry,
  ThinkingLevelChangeEntry,
  ActiveToolsChangeEntry,
  CompactionEntry,
  BranchSummaryEntry,
  LabelEntry,
  SessionInfoEntry,
  CustomEntry,
]);
export type SessionEntry = z.infer<typeof SessionEntry>;
export type SessionEntryType = SessionEntry["type"];
export type MessageEntry = z.infer<typeof MessageEntry>;
export type CompactionEntry = z.infer<typeof CompactionEntry>;
