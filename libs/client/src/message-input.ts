// What prompt/steer/followUp/nextTurn accept, and how it becomes a command's message fields.
import type { CommandOf, ImageContent } from "@fleet/protocol";

/** A message input: a plain string, `{text}` or `{message}` (user or custom AgentMessage), optionally with images. */
export type MessageInput = string | Omit<CommandOf<"prompt">, "type" | "id" | "sessionId" | "ts">;

export type MessageFields = { text?: string; message?: CommandOf<"prompt">["message"]; images?: ImageContent[] };

export function toMessageFields(input: MessageInput): MessageFields {
  if (typeof input === "string") return { text: input };
  const fields: MessageFields = {};
  if (input.text !== undefined) fields.text = input.text;
  if (input.message !== undefined) fields.message = input.message;
  if (input.images !== undefined) fields.images = input.images;
  return fields;
}
