import { z } from "zod";
import { type TextContent, type ThinkingContent, ToolCallContent } from "./content.js";
import { AssistantMessage } from "./messages.js";

/**
 * Streaming deltas of one assistant message, as they travel in `message_update.deltas`.
 * They carry no `partial` snapshot: applying them in order to the `message_start` message rebuilds it.
 * `toolcall_start` carries the call's `id` and `name` (pi keeps those in the partial), so the
 * rebuilt block is complete before its arguments stream in.
 */
const Index = z.number().int().nonnegative();

export const StreamDelta = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text_start"), contentIndex: Index }),
  z.object({ type: z.literal("text_delta"), contentIndex: Index, delta: z.string() }),
  z.object({ type: z.literal("text_end"), contentIndex: Index, content: z.string() }),
  z.object({ type: z.literal("thinking_start"), contentIndex: Index }),
  z.object({ type: z.literal("thinking_delta"), contentIndex: Index, delta: z.string() }),
  z.object({
    type: z.literal("thinking_end"),
    contentIndex: Index,
    content: z.string(),
    thinkingSignature: z.string().optional(),
  }),
  z.object({ type: z.literal("toolcall_start"), contentIndex: Index, id: z.string(), name: z.string() }),
  z.object({ type: z.literal("toolcall_delta"), contentIndex: Index, delta: z.string() }),
  z.object({ type: z.literal("toolcall_end"), contentIndex: Index, toolCall: ToolCallContent }),
]);
export type StreamDelta = z.infer<typeof StreamDelta>;

/**
 * What a `streamFn` yields (the engine's LLM port). `start` carries the initial message (api,
 * provider, model, zero usage); `done` and `error` are terminal and carry the final message.
 * Contract: a streamFn never throws; failures arrive as `error` with reason `error` or `aborted`.
 */
export const AssistantStreamEvent = z.union([
  z.object({ type: z.literal("start"), partial: AssistantMessage }),
  StreamDelta,
  z.object({ type: z.literal("done"), reason: z.enum(["stop", "length", "toolUse"]), message: AssistantMessage }),
  z.object({ type: z.literal("error"), reason: z.enum(["error", "aborted"]), error: AssistantMessage }),
]);
export type AssistantStreamEvent = z.infer<typeof AssistantStreamEvent>;

/** pi's `message_update.assistantMessageEvent`, rebuilt from a wire delta (it carries `partial`). */
export type PiAssistantMessageEvent = StreamDelta & { partial: AssistantMessage };

export type { TextContent, ThinkingContent };
