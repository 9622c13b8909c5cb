// A session's budgets on its owning worker: the checks of the streaming guard and the decider, the
// tenant's spend records and the spend metrics, all read from the session's fold.
import {
  addSpend,
  type BudgetViolation,
  budgetViolation,
  emptySpend,
  type FleetEvent,
  type SessionState,
  type Spend,
  spendOfEvent,
  utcDayOf,
} from "@fleet/protocol";
import type { Logger } from "@fleet/runtime";
import type { BudgetGuard } from "./budget-guard.js";
import type { DecideContext } from "./decide/decision.js";
import type { LoopMetrics } from "./metrics.js";
import type { TenantBudgetView } from "./tenant-budget-view.js";

export interface SessionBudget {
  /** The streaming guard's check: run, session and tenant limits against the fold plus the call. */
  readonly guard: BudgetGuard;
  /** The tenant's limits and today's spend, for the decider. */
  tenantBudget(): DecideContext["tenantBudget"];
  /** After an event is durable and folded: counts what an LLM call spent (an assistant message, a summary), and records the day. */
  afterFold(event: FleetEvent): void;
  /** Writes the fold's spend of today to the tenant's records (after a load: a crash may have lost it). */
  recordToday(): void;
  /** Writes the fold's spend of every day to the tenant's records (a restored session's history). */
  recordAll(): Promise<void>;
}

export function createSessionBudget(opts: {
  sessionId: string;
  state: SessionState;
  tenant: TenantBudgetView | undefined;
  now: () => number;
  metrics: LoopMetrics;
  log: Logger;
}): SessionBudget {
  const { sessionId, state, tenant, metrics, log } = opts;
  const tenantSpent = (day: string, call: Spend): Spend =>
    tenant ? addSpend(tenant.spent(day, sessionId, state.spend.days.get(day)), call) : call;
  const write = async (day: string) => {
    const spent = state.spend.days.get(day);
    if (!tenant || !spent) return;
    await tenant.record({ sessionId, day, events: state.events, ...spent });
  };
  const record = (day: string) => void write(day).catch(() => undefined);
  const exceeded = (v: BudgetViolation, when: string) => {
    metrics.budgetExceeded.inc({ scope: v.scope, when });
    log.info({ evt: "budget_exceeded", scope: v.scope, limit: v.limit, spent: v.spent, max: v.max, when }, "budget");
  };
  return {
    guard: {
      check(call) {
        const s = state.spend;
        return (
          budgetViolation("run", s.budget.run, addSpend(s.run, call)) ??
          budgetViolation("session", s.budget.session, addSpend(s.session, call)) ??
          budgetViolation("tenant", tenant?.limits(), tenantSpent(utcDayOf(opts.now()), call))
        );
      },
      limited: () =>
        state.spend.budget.run !== undefined ||
        state.spend.budget.session !== undefined ||
        tenant?.limits() !== undefined,
      onExceeded: exceeded,
    },
    tenantBudget() {
      const limits = tenant?.limits();
      if (!limits) return undefined;
      const day = utcDayOf(opts.now());
      return { limits, spent: tenantSpent(day, emptySpend()) };
    },
    afterFold(event) {
      if (event.type === "command_rejected" && event.code === "budget_exceeded") {
        metrics.budgetExceeded.inc({
          scope: /^Budget exceeded: (\w+)/.exec(event.reason)?.[1] ?? "unknown",
          when: "decide",
        });
      }
      const used = spendOfEvent(event);
      if (!used) return;
      metrics.llmTokens.inc({ kind: "input" }, used.inputTokens);
      metrics.llmTokens.inc({ kind: "output" }, used.outputTokens);
      metrics.llmCost.inc(used.costUsd);
      record(utcDayOf(event.meta.ts));
    },
    recordToday: () => record(utcDayOf(opts.now())),
    async recordAll() {
      for (const day of state.spend.days.keys()) await write(day);
    },
  };
}
