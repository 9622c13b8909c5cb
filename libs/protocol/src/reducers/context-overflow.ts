// pi-ai 0.73's overflow detection (`isContextOverflow`, utils/overflow.js), as a pure function.
import type { AssistantMessage } from "../messages.js";

/** Provider error texts that mean the input exceeded the context window (pi-ai's list, in order). */
const OVERFLOW_PATTERNS: readonly RegExp[] = [
  /prompt is too long/i,
  /request_too_large/i,
  /input is too long for requested model/i,
  /exceeds the context window/i,
  /input token count.*exceeds the maximum/i,
  /maximum prompt length is \d+/i,
  /reduce the length of the messages/i,
  /maximum context length is \d+ tokens/i,
  /exceeds the limit of \d+/i,
  /exceeds the available context size/i,
  /greater than the context length/i,
  /context window exceeds limit/i,
  /exceeded model token limit/i,
  /too large for model with \d+ maximum context length/i,
  /model_context_window_exceeded/i,
  /prompt too long; exceeded (?:max )?context length/i,
  /context[_ ]length[_ ]exceeded/i,
  /too many tokens/i,
  /token limit exceeded/i,
  /^4(?:00|13)\s*(?:status code)?\s*\(no body\)/i,
];

/** Texts that are never an overflow even when an overflow pattern matches (throttling, rate limits). */
const NON_OVERFLOW_PATTERNS: readonly RegExp[] = [
  /^(Throttling error|Service unavailable):/i,
  /rate limit/i,
  /too many requests/i,
];

/**
 * True when `message` reports a context overflow: an `error` whose text matches pi-ai's overflow
 * patterns (and no rate-limit pattern); or, given `contextWindow`, a `stop` whose input + cacheRead
 * exceeds it (silent overflow), or a `length` stop with no output whose input fills ≥ 99 % of it.
 */
export function isContextOverflow(message: AssistantMessage, contextWindow?: number): boolean {
  const text = message.errorMessage;
  if (message.stopReason === "error" && text) {
    const nonOverflow = NON_OVERFLOW_PATTERNS.some((p) => p.test(text));
    if (!nonOverflow && OVERFLOW_PATTERNS.some((p) => p.test(text))) return true;
  }
  if (!contextWindow) return false;
  const input = message.usage.input + message.usage.cacheRead;
  if (message.stopReason === "stop" && input > contextWindow) return true;
  return message.stopReason === "length" && message.usage.output === 0 && input >= contextWindow * 0.99;
}
