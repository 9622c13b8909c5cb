// Whether a run or a summary may start: the budgets against the spend the log shows plus the
// estimated input of the first LLM call.
import {
  addSpend,
  type BudgetViolation,
  budgetViolation,
  type ContextMessage,
  estimateContextTokens,
  estimateTokens,
  type SessionState,
  type Spend,
} from "@fleet/protocol";
import type { DecideContext } from "./decision.js";

/**
 * The first budget a new run would start over, or `undefined`. The first call's input is estimated
 * as pi estimates a context (the last usage plus chars/4 of what follows, plus the system prompt);
 * its output and cost are not estimated, so output and cost limits refuse a run only once reached.
 * Order: run, session, tenant.
 */
export function budgetRefusal(
  state: SessionState,
  context: readonly ContextMessage[],
  added: readonly ContextMessage[],
  tenant: DecideContext["tenantBudget"],
): BudgetViolation | undefined {
  const input = estimateContextTokens([...context, ...added]).tokens + Math.ceil(state.status.systemPrompt.length / 4);
  return startsOver(state, input, tenant, true);
}

/**
 * The first budget a summary's LLM call outside a run (a manual compaction, a branch summary) would
 * start over: the session's, then the tenant's, against the spend plus pi's estimate of each message
 * it summarises (chars/4). No run is open, so no run budget applies.
 */
export function summaryBudgetRefusal(
  state: SessionState,
  summarised: readonly ContextMessage[],
  tenant: DecideContext["tenantBudget"],
): BudgetViolation | undefined {
  let input = 0;
  for (const message of summarised) input += estimateTokens(message);
  return startsOver(state, input, tenant, false);
}

function startsOver(
  state: SessionState,
  inputTokens: number,
  tenant: DecideContext["tenantBudget"],
  run: boolean,
): BudgetViolation | undefined {
  const call: Spend = { inputTokens, outputTokens: 0, totalTokens: inputTokens, costUsd: 0 };
  const budget = state.spend.budget;
  return (
    (run ? budgetViolation("run", budget.run, call) : undefined) ??
    budgetViolation("session", budget.session, addSpend(state.spend.session, call)) ??
    (tenant ? budgetViolation("tenant", tenant.limits, addSpend(tenant.spent, call)) : undefined)
  );
}
