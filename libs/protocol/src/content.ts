import { z } from "zod";
import { BlobRef } from "./blob-ref.js";

/** pi-ai content blocks. Unknown provider fields (signatures, ids) are preserved. */
/**
 * Content by reference (Fleet): a block with `blob` holds its content in that object (`fleet_blobs`
 * once its command is accepted): a text block's `text` is then only a preview, an image's `data` is
 * empty and the object holds the image's bytes. Readers resolve it (see input-blobs.ts).
 */
const blob = BlobRef.optional();

export const TextContent = z.looseObject({
  type: z.literal("text"),
  text: z.string(),
  textSignature: z.string().optional(),
  blob,
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
  blob,
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
