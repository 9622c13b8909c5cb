// One-line summaries of messages, entries and tool arguments for terminal output (pure).
import type { AgentMessage, ContextMessage, SessionEntry } from "@fleet/protocol";

/** Collapses whitespace and cuts to `max` characters with an ellipsis. */
export function oneLine(text: string, max = 80): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, Math.max(0, max - 1))}…` : flat;
}

/** The text blocks of a message's content, joined. */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((block: { type?: string; text?: string }) => (block?.type === "text" ? (block.text ?? "") : ""))
    .filter((t) => t.length > 0)
    .join("\n");
}

/** `name(key: value, …)` with each value JSON-encoded and cut. */
export function formatToolCall(name: string, args: unknown, max = 100): string {
  if (args === null || typeof args !== "object" || Array.isArray(args))
    return `${name}(${oneLine(JSON.stringify(args) ?? "", max)})`;
  const parts = Object.entries(args as Record<string, unknown>).map(
    ([key, value]) => `${key}: ${oneLine(JSON.stringify(value) ?? "undefined", 40)}`,
  );
  return `${name}(${oneLine(parts.join(", "), max)})`;
}

/** `role: "text"` for any message a transcript may hold. */
export function summarizeMessage(message: AgentMessage | ContextMessage, max = 80): string {
  switch (message.role) {
    case "user":
      return `user: ${JSON.stringify(oneLine(contentText(message.content), max))}`;
    case "assistant": {
      const text = contentText(message.content);
      const calls = message.content
        .filter((b) => b.type === "toolCall")
        .map((b) => (b.type === "toolCall" ? b.name : ""));
      const parts = [text ? JSON.stringify(oneLine(text, max)) : "", calls.length ? `→ ${calls.join(", ")}` : ""];
      const stop = message.stopReason === "error" || message.stopReason === "aborted" ? ` (${message.stopReason})` : "";
      return `assistant: ${parts.filter(Boolean).join(" ") || "(empty)"}${stop}`;
    }
    case "toolResult":
      return `${message.toolName} ${message.isError ? "✗" : "✓"} ${JSON.stringify(oneLine(contentText(message.content), max))}`;
    case "custom":
      return `${message.customType}: ${JSON.stringify(oneLine(contentText(message.content), max))}`;
    case "branchSummary":
      return `branch summary: ${JSON.stringify(oneLine(message.summary, max))}`;
    case "compactionSummary":
      return `compaction summary: ${JSON.stringify(oneLine(message.summary, max))}`;
  }
}

/** A tree node's one-line description. */
export function summarizeEntry(entry: SessionEntry, max = 70): string {
  switch (entry.type) {
    case "message":
      return summarizeMessage(entry.message, max);
    case "custom_message":
      return `${entry.customType}: ${JSON.stringify(oneLine(contentText(entry.content), max))}`;
    case "model_change":
      return `model → ${entry.provider}/${entry.modelId}`;
    case "thinking_level_change":
      return `thinking → ${entry.thinkingLevel}`;
    case "active_tools_change":
      return `tools → ${entry.toolNames.join(", ") || "(none)"}`;
    case "compaction":
      return `compaction (${entry.tokensBefore} tokens before): ${JSON.stringify(oneLine(entry.summary, max))}`;
    case "branch_summary":
      return `branch summary: ${JSON.stringify(oneLine(entry.summary, max))}`;
    case "label":
      return entry.label
        ? `label ${shortId(entry.targetId)} = ${JSON.stringify(entry.label)}`
        : `label ${shortId(entry.targetId)} removed`;
    case "session_info":
      return `name = ${JSON.stringify(entry.name)}`;
    case "custom":
      return `custom ${entry.customType}`;
  }
}

/** The last 8 characters of an id: the random part of a UUIDv7 or ULID, unique enough to show. */
export function shortId(id: string): string {
  return id.length > 8 ? id.slice(-8) : id;
}
