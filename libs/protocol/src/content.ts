import { z } from "zod";

/** pi-ai content blocks. Unknown provider fields (signatures, ids) are preserved. */
export const TextContent = z.looseObject({
  type: z.literal("text"),
  text: z.string(),
  textSignature: z.string().optional(),
});
export type TextContent = z.infer<typeof TextContent>;

export const ThinkingContent = z.looseObject({
  type: z.literal("thinking"),
  thinking: z.string(),
  thinkingSignature: z.string().optional(),
  redacted: z.boolean().optional(),
});
export type ThinkingContent = z.infer<typeof ThinkingContent>;

export const ImageContent = z.looseObject({
  type: z.literal("image"),
  data: z.string().describe("base64"),
  mimeType: z.string().min(1),
});
export type ImageContent = z.infer<typeof ImageContent>;

export const ToolCallContent = z.looseObject({
  type: z.literal("toolCall"),
  id: z.string().min(1),
  name: z.string().min(1),
  arguments: z.record(z.string(), z.unknown()),
});
export type ToolCallContent = z.infer<typeof ToolCallContent>;

export const UserContentBlock = z.discriminatedUnion("type", [TextContent, ImageContent]);
export type UserContentBlock = z.infer<typeof UserContentBlock>;

export const AssistantContentBlock = z.discriminatedUnion("type", [TextContent, ThinkingContent, ToolCallContent]);
export type AssistantContentBlock = z.infer<typeof AssistantContentBlock>;

/** Tool results carry text and images only. */
export const ToolResultContentBlock = UserContentBlock;
export type ToolResultContentBlock = UserContentBlock;
