// One-line renderings of spend and budgets (the CLI, the web console).
import type { BudgetLimits, Spend } from "./budget.js";

/** `in 1200 · out 340 · $0.0123`. */
export function formatSpend(s: Spend): string {
  return `in ${s.inputTokens} · out ${s.outputTokens} · $${s.costUsd.toFixed(4)}`;
}

/** `out ≤ 1000, $ ≤ 2.0000`, or `none`. */
export function formatLimits(limits: BudgetLimits | undefined): string {
  if (!limits) return "none";
  const parts = [
    limits.inputTokens !== undefined ? `in ≤ ${limits.inputTokens}` : "",
    limits.outputTokens !== undefined ? `out ≤ ${limits.outputTokens}` : "",
    limits.totalTokens !== undefined ? `total ≤ ${limits.totalTokens}` : "",
    limits.costUsd !== undefined ? `$ ≤ ${limits.costUsd.toFixed(4)}` : "",
  ].filter(Boolean);
  return parts.length ? parts.join(", ") : "none";
}
