import type { AgentMessage, ImageContent } from "@fleet/protocol";

/** A command's message input: `{text}` (one user text block) or `{message}`, either plus images. */
export interface MessageInput {
  text?: string | undefined;
  message?: AgentMessage | undefined;
  images?: ImageContent[] | undefined;
}

/** Builds the AgentMessage a message input stands for. Images are appended to a user message's content. */
export function messageFromInput(input: MessageInput, now: number): AgentMessage {
  const images = input.images ?? [];
  if (input.message) {
    const m = input.message;
    if (images.length === 0) return m;
    if (m.role === "user" || m.role === "custom") {
      const content = typeof m.content === "string" ? [{ type: "text" as const, text: m.content }] : m.content;
      return { ...m, content: [...content, ...images] };
    }
    return m;
  }
  return { role: "user", content: [{ type: "text", text: input.text ?? "" }, ...images], timestamp: now };
}
