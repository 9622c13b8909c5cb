// The budget a child inherits from its parent (PROTOCOL "Sub-agents", budget): what the parent's
// run and session budgets have left, shared evenly by the `agent` calls of one assistant message, as
// the child's run limits. The child's own streaming guard then holds it to that share while it runs,
// so the children of one batch together never spend more than the parent had left. Pure.
import type { BudgetLimits, SessionBudget, Spend } from "@fleet/protocol";

const FIELDS = ["inputTokens", "outputTokens", "totalTokens", "costUsd"] as const;

/** The parent's budget in force and what its open run and its session have spent so far. */
export interface ParentSpend {
  budget: SessionBudget;
  run: Spend;
  session: Spend;
}

export type ChildBudget =
  /** The parent has no run or session budget: the child keeps its own. */
  | { kind: "unlimited" }
  /** The child's run limits: each the parent's least remainder of that measure, divided by `siblings`. */
  | { kind: "share"; run: BudgetLimits }
  /** The parent has nothing left in some measure: no child is started. */
  | { kind: "spent"; reason: string };

/**
 * `siblings`: the `agent` calls of the message (at least 1). Token limits are rounded down; a share
 * of 0 tokens is `spent`.
 */
export function childBudget(parent: ParentSpend, siblings: number): ChildBudget {
  const n = Math.max(1, siblings);
  const run: BudgetLimits = {};
  for (const field of FIELDS) {
    const left = [
      remainder(parent.budget.run?.[field], parent.run[field]),
      remainder(parent.budget.session?.[field], parent.session[field]),
    ].filter((v): v is number => v !== undefined);
    if (left.length === 0) continue;
    const share = Math.min(...left) / n;
    const limit = field === "costUsd" ? share : Math.floor(share);
    if (limit <= 0) {
      return { kind: "spent", reason: `Sub-agent refused: the parent's budget has no ${field} left for it` };
    }
    run[field] = limit;
  }
  return Object.keys(run).length === 0 ? { kind: "unlimited" } : { kind: "share", run };
}

/** The tighter of two run limits, field by field (absent: no limit). */
export function tighterLimits(a: BudgetLimits | undefined, b: BudgetLimits): BudgetLimits {
  const out: BudgetLimits = { ...b };
  for (const field of FIELDS) {
    const mine = a?.[field];
    if (mine !== undefined) out[field] = Math.min(mine, b[field] ?? Number.POSITIVE_INFINITY);
  }
  return out;
}

const remainder = (limit: number | undefined, spent: number) => (limit === undefined ? undefined : limit - spent);
