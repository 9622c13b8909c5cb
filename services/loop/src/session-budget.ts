// A session's budgets on its owning worker: the checks of the streaming guard and the decider, the
// counting of its spend into the tenant's day totals and the spend metrics, all read from the
// session's fold.
import {
  addSpend,
  type BudgetViolation,
  budgetViolation,
  type DaySpend,
  emptySpend,
  type FleetEvent,
  type SessionState,
  type Spend,
  type SpendIntent,
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
  /** Counts the fold's spend of today into the tenant's totals (after a load: a crash may have lost it). */
  recordToday(): void;
  /**
   * Counts the fold's spend of today and yesterday for a restored session: its deletion left
   * `counted` (the archive's spend per day) in the totals, so only what the fold has over it is added.
   */
  recordAll(counted: readonly DaySpend[]): Promise<void>;
}

const DAY_MS = 86_400_000;

/** `a` less `b`, per field, never below zero. */
const minus = (a: Spend, b: Spend): Spend => ({
  inputTokens: Math.max(0, a.inputTokens - b.inputTokens),
  outputTokens: Math.max(0, a.outputTokens - b.outputTokens),
  totalTokens: Math.max(0, a.totalTokens - b.totalTokens),
  costUsd: Math.max(0, a.costUsd - b.costUsd),
});

export function createSessionBudget(opts: {
  sessionId: string;
  partition: number;
  state: SessionState;
  tenant: TenantBudgetView | undefined;
  now: () => number;
  metrics: LoopMetrics;
  log: Logger;
  /**
   * Whether the session's spend is this owner's to count now: not while a deletion or a restore the
   * log shows as begun is unfinished (the deletion counts it, and the restore counts it against what
   * the deletion left).
   */
  countable: () => boolean;
}): SessionBudget {
  const { sessionId, partition, state, tenant, metrics, log } = opts;
  /** Per day: what the tenant's totals count of this session, as far as this owner knows. */
  const counted = new Map<string, Spend>();
  /** What the fold has spent on `day` that the totals do not count yet (nothing while unknown). */
  const uncounted = (day: string): Spend => {
    const spent = state.spend.days.get(day);
    const known = counted.get(day);
    return spent && known ? minus(spent, known) : emptySpend();
  };
  const tenantSpent = (day: string, call: Spend): Spend =>
    tenant ? addSpend(addSpend(tenant.total(day), uncounted(day)), call) : call;
  const write = async (day: string, mode: SpendIntent["mode"], baseline?: Spend) => {
    const spent = state.spend.days.get(day);
    if (!tenant || !spent) return;
    // The fold's day record changes in place: the request keeps a copy.
    const spend = addSpend(emptySpend(), spent);
    await tenant.count(day, partition, {
      sessionId,
      events: state.events,
      spend,
      mode,
      ...(baseline ? { baseline } : {}),
      onCounted: (now) => {
        if (now) counted.set(day, now);
      },
    });
  };
  /**
   * Counts the fold's spend of `day`. Until the totals answer what they count of the session, it is
   * taken as `assumed`: the fold before this event (the totals count every earlier event but a crash
   * lost an update).
   */
  const record = (day: string, assumed: Spend | undefined) => {
    if (!opts.countable()) return;
    if (!counted.has(day) && assumed) counted.set(day, assumed);
    void write(day, "count").catch(() => undefined);
  };
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
      const day = utcDayOf(event.meta.ts);
      const spent = state.spend.days.get(day) ?? used;
      record(day, minus(spent, used));
    },
    recordToday: () => {
      const day = utcDayOf(opts.now());
      const spent = state.spend.days.get(day);
      record(day, spent ? addSpend(emptySpend(), spent) : undefined);
    },
    async recordAll(baseline) {
      const yesterday = utcDayOf(opts.now() - DAY_MS);
      for (const day of state.spend.days.keys()) {
        if (day < yesterday) continue;
        const before = baseline.find((s) => s.day === day);
        await write(day, "restore", before ? addSpend(emptySpend(), before) : emptySpend());
      }
    },
  };
}
