// pi coding-agent's threshold test for automatic compaction (`_checkCompaction`, case 2).
import type { CompactionSettings } from "../config.js";
import type { AssistantMessage } from "../messages.js";
import type { SessionEntry } from "../session-entry.js";
import { entryToContextMessage } from "./build-context.js";
import { estimateTokens, usageTokens } from "./token-estimate.js";

/**
 * The context's size as pi estimates it: the usage of the last assistant message on the path that is
 * neither `error` nor `aborted`, plus the chars/4 estimate of every context message after it.
 * `undefined` when no such message comes after the path's latest compaction entry: kept messages
 * carry the usage of the context before it (pi skips the check then, so a compaction never
 * triggers the next).
 */
export function contextTokensAfterCompaction(path: readonly SessionEntry[]): number | undefined {
  let trailing = 0;
  for (let i = path.length - 1; i >= 0; i--) {
    const entry = path[i] as SessionEntry;
    if (entry.type === "compaction") return undefined;
    if (entry.type === "message" && entry.message.role === "assistant" && hasUsage(entry.message)) {
      return usageTokens(entry.message.usage) + trailing;
    }
    const message = entryToContextMessage(entry);
    if (message) trailing += estimateTokens(message);
  }
  return undefined;
}

function hasUsage(message: AssistantMessage): boolean {
  return message.stopReason !== "error" && message.stopReason !== "aborted";
}

export interface ThresholdCheck {
  /** Compact now: enabled, and `tokens > contextWindow - reserveTokens`. */
  compact: boolean;
  /** `contextTokensAfterCompaction`; `undefined` when there is no fresh usage to judge by. */
  tokens: number | undefined;
  /** `contextWindow - reserveTokens`. */
  limit: number;
}

/** pi's `shouldCompact` on the path's context size (see `contextTokensAfterCompaction`). */
export function thresholdCompaction(
  path: readonly SessionEntry[],
  settings: CompactionSettings,
  contextWindow: number,
): ThresholdCheck {
  const limit = contextWindow - settings.reserveTokens;
  const tokens = settings.enabled ? contextTokensAfterCompaction(path) : undefined;
  return { compact: tokens !== undefined && tokens > limit, tokens, limit };
}
