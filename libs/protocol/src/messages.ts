import { z } from "zod";
import { AssistantContentBlock, ToolResultContentBlock, UserContentBlock } from "./content.js";

export const Cost = z.object({
  input: z.number(),
  output: z.number(),
  cacheRead: z.number(),
  cacheWrite: z.number(),
  total: z.number(),
});
export type Cost = z.infer<typeof Cost>;

export const Usage = z.object({
  input: z.number().int().nonnegative(),
  output: z.number().int().nonnegative(),
  cacheRead: z.number().int().nonnegative(),
  cacheWrite: z.number().int().nonnegative(),
  totalTokens: z.number().int().nonnegative(),
  cost: Cost,
});
export type Usage = z.infer<typeof Usage>;

export const StopReason = z.enum(["stop", "length", "toolUse", "error", "aborted"]);
export type StopReason = z.infer<typeof StopReason>;

export const ThinkingLevel = z.enum(["off", "minimal", "low", "medium", "high", "xhigh"]);
export type ThinkingLevel = z.infer<typeof ThinkingLevel>;

/** Text of an aborted assistant message, wherever the abort landed. */
export const ABORTED_ERROR_MESSAGE = "Request was aborted";

export const UserMessage = z.looseObject({
  role: z.literal("user"),
  content: z.union([z.string(), z.array(UserContentBlock)]),
  timestamp: z.number(),
});
export type UserMessage = z.infer<typeof UserMessage>;

export const AssistantMessage = z.looseObject({
  role: z.literal("assistant"),
  content: z.array(AssistantContentBlock),
  api: z.string(),
  provider: z.string(),
  model: z.string(),
  usage: Usage,
  stopReason: StopReason,
  errorMessage: z.string().optional(),
  /** Fleet addition: why an `error` stop happened when Fleet ended it (`budget_exceeded`). */
  errorReason: z.literal("budget_exceeded").optional(),
  timestamp: z.number(),
});
export type AssistantMessage = z.infer<typeof AssistantMessage>;

export const ToolResultMessage = z.looseObject({
  role: z.literal("toolResult"),
  toolCallId: z.string().min(1),
  toolName: z.string().min(1),
  content: z.array(ToolResultContentBlock),
  details: z.unknown().optional(),
  isError: z.boolean(),
  timestamp: z.number(),
});
export type ToolResultMessage = z.infer<typeof ToolResultMessage>;

/** Extension-injected message (pi coding-agent `custom`); becomes a `custom_message` entry. */
export const CustomMessage = z.looseObject({
  role: z.literal("custom"),
  customType: z.string().min(1),
  content: z.union([z.string(), z.array(UserContentBlock)]),
  display: z.boolean(),
  details: z.unknown().optional(),
  timestamp: z.number(),
});
export type CustomMessage = z.infer<typeof CustomMessage>;

/** Context-only summary messages produced by buildContext (never sent as events). */
export const BranchSummaryMessage = z.object({
  role: z.literal("branchSummary"),
  summary: z.string(),
  fromId: z.string(),
  timestamp: z.number(),
});
export type BranchSummaryMessage = z.infer<typeof BranchSummaryMessage>;

export const CompactionSummaryMessage = z.object({
  role: z.literal("compactionSummary"),
  summary: z.string(),
  tokensBefore: z.number(),
  timestamp: z.number(),
});
export type CompactionSummaryMessage = z.infer<typeof CompactionSummaryMessage>;

/** Messages that travel in events. */
export const AgentMessage = z.discriminatedUnion("role", [
  UserMessage,
  AssistantMessage,
  ToolResultMessage,
  CustomMessage,
]);
export type AgentMessage = z.infer<typeof AgentMessage>;

/** Messages of a built context: event messages plus the two summary roles. */
export const ContextMessage = z.discriminatedUnion("role", [
  UserMessage,
  AssistantMessage,
  ToolResultMessage,
  CustomMessage,
  BranchSummaryMessage,
  CompactionSummaryMessage,
]);
export type ContextMessage = z.infer<typeof ContextMessage>;

/** Provider-facing messages (what convertToLlm returns). */
export const LlmMessage = z.discriminatedUnion("role", [UserMessage, AssistantMessage, ToolResultMessage]);
export type LlmMessage = z.infer<typeof LlmMessage>;

export const emptyUsage = (): Usage => ({
  input: 0,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 0,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
});

/** The sum of two usages, field by field (costs included). */
export function addUsage(a: Usage, b: Usage): Usage {
  return {
    input: a.input + b.input,
    output: a.output + b.output,
    cacheRead: a.cacheRead + b.cacheRead,
    cacheWrite: a.cacheWrite + b.cacheWrite,
    totalTokens: a.totalTokens + b.totalTokens,
    cost: {
      input: a.cost.input + b.cost.input,
      output: a.cost.output + b.cost.output,
      cacheRead: a.cost.cacheRead + b.cost.cacheRead,
      cacheWrite: a.cost.cacheWrite + b.cost.cacheWrite,
      total: a.cost.total + b.cost.total,
    },
  };
}
