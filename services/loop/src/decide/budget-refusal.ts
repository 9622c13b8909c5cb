// Whether a run may start: the session's budget and the tenant's against the spend the log shows
// plus the estimated input of the run's first LLM call.
import {
  addSpend,
  type BudgetViolation,
  budgetViolation,
  type ContextMessage,
  estimateContextTokens,
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
  const firstCall: Spend = { inputTokens: input, outputTokens: 0, totalTokens: input, costUsd: 0 };
  const budget = state.spend.budget;
  return (
    budgetViolation("run", budget.run, firstCall) ??
    budgetViolation("session", budget.session, addSpend(state.spend.session, firstCall)) ??
    (tenant ? budgetViolation("tenant", tenant.limits, addSpend(tenant.spent, firstCall)) : undefined)
  );
}
