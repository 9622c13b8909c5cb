// pi's flat transcript text, the conversation part of a summariser prompt (pi-semantics §8.2).
import type { ContextMessage } from "../messages.js";
import { convertToLlm } from "./convert-to-llm.js";

/** Tool results longer than this are cut in the transcript. */
export const TOOL_RESULT_MAX_CHARS = 2000;

/**
 * Converts `messages` with `convertToLlm`, then writes one paragraph per part, joined by a blank line:
 * - `[User]: <text blocks joined>` (skipped when empty; images are ignored);
 * - per assistant message, in this order: `[Assistant thinking]: <thinking blocks joined by \n>`,
 *   `[Assistant]: <text blocks joined by \n>`, `[Assistant tool calls]: name(k=<json>, …); …`
 *   (each only when present);
 * - `[Tool result]: <text>` (skipped when empty), cut to 2000 characters followed by
 *   `\n\n[... N more characters truncated]`.
 */
export function serializeConversation(messages: readonly ContextMessage[]): string {
  const parts: string[] = [];
  for (const msg of convertToLlm(messages)) {
    if (msg.role === "user") {
      const text =
        typeof msg.content === "string"
          ? msg.content
          : msg.content.map((c) => (c.type === "text" ? c.text : "")).join("");
      if (text) parts.push(`[User]: ${text}`);
    } else if (msg.role === "assistant") {
      const texts: string[] = [];
      const thinking: string[] = [];
      const calls: string[] = [];
      for (const block of msg.content) {
        if (block.type === "text") texts.push(block.text);
        else if (block.type === "thinking") thinking.push(block.thinking);
        else {
          const args = Object.entries(block.arguments).map(([k, v]) => `${k}=${JSON.stringify(v)}`);
          calls.push(`${block.name}(${args.join(", ")})`);
        }
      }
      if (thinking.length > 0) parts.push(`[Assistant thinking]: ${thinking.join("\n")}`);
      if (texts.length > 0) parts.push(`[Assistant]: ${texts.join("\n")}`);
      if (calls.length > 0) parts.push(`[Assistant tool calls]: ${calls.join("; ")}`);
    } else {
      const text = msg.content.map((c) => (c.type === "text" ? c.text : "")).join("");
      if (text) parts.push(`[Tool result]: ${truncate(text, TOOL_RESULT_MAX_CHARS)}`);
    }
  }
  return parts.join("\n\n");
}

function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}\n\n[... ${text.length - max} more characters truncated]`;
}
