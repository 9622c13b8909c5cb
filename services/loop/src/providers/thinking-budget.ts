import type { Anthropic } from "@anthropic-ai/sdk";
import type { ThinkingLevel } from "@fleet/protocol";

/**
 * Extended-thinking budget (`budget_tokens`) per thinking level:
 *
 * | level   | budget_tokens |
 * |---------|---------------|
 * | off     | — (`thinking: {type:"disabled"}`) |
 * | minimal | 1 024  |
 * | low     | 4 096  |
 * | medium  | 10 240 |
 * | high    | 24 576 |
 * | xhigh   | 32 768 |
 *
 * The API requires `1024 ≤ budget_tokens < max_tokens`. The budget is clamped to
 * `max_tokens − MIN_VISIBLE_OUTPUT_TOKENS` so that some visible output always fits; when that leaves
 * less than the API minimum, thinking is disabled for the call.
 */
export const THINKING_BUDGETS: Readonly<Record<Exclude<ThinkingLevel, "off">, number>> = {
  minimal: 1_024,
  low: 4_096,
  medium: 10_240,
  high: 24_576,
  xhigh: 32_768,
};

export const MIN_THINKING_BUDGET = 1_024;
export const MIN_VISIBLE_OUTPUT_TOKENS = 1_024;

/** The `thinking` request parameter for a level and the call's `max_tokens`. */
export function buildThinkingConfig(level: ThinkingLevel, maxTokens: number): Anthropic.ThinkingConfigParam {
  if (level === "off") return { type: "disabled" };
  const budget = Math.min(THINKING_BUDGETS[level], maxTokens - MIN_VISIBLE_OUTPUT_TOKENS);
  if (budget < MIN_THINKING_BUDGET) return { type: "disabled" };
  return { type: "enabled", budget_tokens: budget };
}
