// pi's chars/4 token estimate (pi-semantics §8.2).
import type { TextContent } from "../content.js";
import type { ContextMessage, Usage } from "../messages.js";

/** A text's characters; a text by reference counts its object's size, not its preview. */
const textChars = (block: TextContent): number => block.blob?.size ?? block.text.length;

/** Characters an image counts for in the estimate (1200 tokens). */
export const IMAGE_ESTIMATE_CHARS = 4800;

/**
 * `ceil(chars / 4)` where chars counts (a text by reference: its size), by role: user → text only (images ignored); assistant →
 * text + thinking + each tool call's name and `JSON.stringify(arguments)`; toolResult and custom →
 * text + 4800 per image; branchSummary / compactionSummary → the summary.
 */
export function estimateTokens(message: ContextMessage): number {
  let chars = 0;
  switch (message.role) {
    case "user":
      if (typeof message.content === "string") chars = message.content.length;
      else for (const block of message.content) if (block.type === "text") chars += textChars(block);
      break;
    case "assistant":
      for (const block of message.content) {
        if (block.type === "text") chars += textChars(block);
        else if (block.type === "thinking") chars += block.thinking.length;
        else chars += block.name.length + JSON.stringify(block.arguments).length;
      }
      break;
    case "toolResult":
    case "custom":
      if (typeof message.content === "string") chars = message.content.length;
      else {
        for (const block of message.content) {
          chars += block.type === "text" ? textChars(block) : IMAGE_ESTIMATE_CHARS;
        }
      }
      break;
    case "branchSummary":
    case "compactionSummary":
      chars = message.summary.length;
      break;
  }
  return Math.ceil(chars / 4);
}

/** Context size reported by a usage: `totalTokens`, or the sum of its parts when that is 0. */
export function usageTokens(usage: Usage): number {
  return usage.totalTokens || usage.input + usage.output + usage.cacheRead + usage.cacheWrite;
}

export interface ContextTokenEstimate {
  tokens: number;
  /** From the last assistant message that is neither error nor aborted; 0 when there is none. */
  usageTokens: number;
  /** Estimate of the messages after that assistant (of every message when there is none). */
  trailingTokens: number;
  lastUsageIndex: number | null;
}

/**
 * pi's context size: the usage of the last assistant message that is neither `error` nor `aborted`,
 * plus the chars/4 estimate of every message after it; with no such message, the estimate of all.
 */
export function estimateContextTokens(messages: readonly ContextMessage[]): ContextTokenEstimate {
  let lastUsageIndex: number | null = null;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m?.role === "assistant" && m.stopReason !== "error" && m.stopReason !== "aborted") {
      lastUsageIndex = i;
      break;
    }
  }
  const fromUsage = lastUsageIndex === null ? 0 : usageTokens((messages[lastUsageIndex] as { usage: Usage }).usage);
  let trailingTokens = 0;
  for (let i = (lastUsageIndex ?? -1) + 1; i < messages.length; i++) {
    trailingTokens += estimateTokens(messages[i] as ContextMessage);
  }
  return { tokens: fromUsage + trailingTokens, usageTokens: fromUsage, trailingTokens, lastUsageIndex };
}
