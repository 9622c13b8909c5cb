// Token and cost budgets: limits, spend, the check, and the tenant's KV records (PROTOCOL "Budgets").
import { z } from "zod";
import type { Usage } from "./messages.js";

/**
 * Limits on what LLM calls may spend. A limit is reached when the spend is at or over it; an absent
 * limit is no limit. `inputTokens` counts every prompt token (`input + cacheRead + cacheWrite`);
 * `totalTokens` is input plus output; `costUsd` is `usage.cost.total`.
 */
export const BudgetLimits = z.object({
  inputTokens: z.number().int().nonnegative().optional(),
  outputTokens: z.number().int().nonnegative().optional(),
  totalTokens: z.number().int().nonnegative().optional(),
  costUsd: z.number().nonnegative().optional(),
});
export type BudgetLimits = z.infer<typeof BudgetLimits>;

/** A session's budget (`SessionConfig.budget`, `set_budget`): per run, and for the session's whole life. */
export const SessionBudget = z.object({ run: BudgetLimits.optional(), session: BudgetLimits.optional() });
export type SessionBudget = z.infer<typeof SessionBudget>;

/** The three scopes a limit applies to; `tenant` is per UTC day, over every session of the tenant. */
export type BudgetScope = "run" | "session" | "tenant";

/** Tokens and dollars spent (sums of assistant `usage`). */
export const Spend = z.object({
  inputTokens: z.number().nonnegative(),
  outputTokens: z.number().nonnegative(),
  totalTokens: z.number().nonnegative(),
  costUsd: z.number().nonnegative(),
});
export type Spend = z.infer<typeof Spend>;

export const emptySpend = (): Spend => ({ inputTokens: 0, outputTokens: 0, totalTokens: 0, costUsd: 0 });

/** What one assistant message spent, from its `usage`. */
export function spendOfUsage(usage: Usage): Spend {
  const inputTokens = usage.input + usage.cacheRead + usage.cacheWrite;
  return {
    inputTokens,
    outputTokens: usage.output,
    totalTokens: inputTokens + usage.output,
    costUsd: usage.cost.total,
  };
}

export function addSpend(a: Spend, b: Spend): Spend {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    totalTokens: a.totalTokens + b.totalTokens,
    costUsd: a.costUsd + b.costUsd,
  };
}

const LIMIT_NAMES: Record<keyof BudgetLimits, string> = {
  inputTokens: "input tokens",
  outputTokens: "output tokens",
  totalTokens: "total tokens",
  costUsd: "cost",
};

/** The first limit reached: its scope, which limit, the spend and the limit. */
export interface BudgetViolation {
  scope: BudgetScope;
  limit: keyof BudgetLimits;
  spent: number;
  max: number;
}

/** The first of `limits` that `spent` reaches (`spent >= max`), in the order input, output, total, cost. */
export function budgetViolation(
  scope: BudgetScope,
  limits: BudgetLimits | undefined,
  spent: Spend,
): BudgetViolation | undefined {
  if (!limits) return undefined;
  for (const limit of ["inputTokens", "outputTokens", "totalTokens", "costUsd"] as const) {
    const max = limits[limit];
    if (max !== undefined && spent[limit] >= max) return { scope, limit, spent: spent[limit], max };
  }
  return undefined;
}

/** `Budget exceeded: session output tokens 1200/1000` (cost as `$0.0123/$0.0100`). */
export function budgetExceededMessage(v: BudgetViolation): string {
  const fmt = (n: number) => (v.limit === "costUsd" ? `$${n.toFixed(4)}` : String(Math.round(n)));
  return `Budget exceeded: ${v.scope} ${LIMIT_NAMES[v.limit]} ${fmt(v.spent)}/${fmt(v.max)}`;
}

/** `errorReason` of an assistant message that a budget ended (with stopReason `error`). */
export const BUDGET_EXCEEDED = "budget_exceeded";

// ---- the tenant's records in KV `fleet_budgets` --------------------------------------------------

const DAY_MS = 86_400_000;

/** The last day `utcDayOf` formatted (events of a session come in time order, mostly on one day). */
let lastDay = { number: Number.NaN, key: "" };

/** The UTC day of `ts` (ms since the epoch) as `YYYY-MM-DD` (civil-from-days; no `Date`). */
export function utcDayOf(ts: number): string {
  const day = Math.floor(ts / DAY_MS);
  if (day === lastDay.number) return lastDay.key;
  const key = formatDay(day);
  lastDay = { number: day, key };
  return key;
}

function formatDay(day: number): string {
  const z0 = day + 719_468;
  const era = Math.floor(z0 / 146_097);
  const doe = z0 - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  const y = yoe + era * 400 + (m <= 2 ? 1 : 0);
  return `${String(y).padStart(4, "0")}-${String(m).padStart(2, "0")}-${String(d).padStart(2, "0")}`;
}

/** A UTC day, `YYYY-MM-DD` (the tenant budget's period). */
export const UtcDay = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, "a UTC day, YYYY-MM-DD");

/**
 * Keys of KV `fleet_budgets`: `limits` holds the tenant's daily `BudgetLimits` (written by an
 * operator); `ledger.<YYYY-MM-DD>` holds what deleted and archived sessions spent on that day
 * (`LedgerRecord`, written by the loop). The day's spend itself is in KV `fleet_spend_totals` and
 * `fleet_spend` (`SPEND_KEYS`, changes 43 and 60); `spend.<YYYY-MM-DD>.<sessionId>` keys
 * (`legacySpend`) are from before it, and a loop worker purges them when it starts.
 */
export const BUDGET_KEYS = {
  limits: "limits",
  ledger: (day: string) => `ledger.${day}`,
  ledgerAll: "ledger.>",
  legacySpend: "spend.>",
} as const;

/**
 * One session's spend on one UTC day as its partition's total counts it (key
 * `session.<day>.<sessionId>` of `fleet_spend`), folded from its log (the assistant `message_end`s
 * whose `meta.ts` falls on that day). `events` is how many of the session's events were folded: a
 * record only replaces one with fewer, so a writer that is behind (a deposed owner) never lowers it.
 */
export const TenantSpendRecord = z.object({
  sessionId: z.string().min(1),
  day: UtcDay,
  events: z.number().int().nonnegative(),
  ...Spend.shape,
});
export type TenantSpendRecord = z.infer<typeof TenantSpendRecord>;

/** What a session spent on one UTC day (a deletion rolls these into the tenant's ledger). */
export const DaySpend = z.object({ day: UtcDay, ...Spend.shape });
export type DaySpend = z.infer<typeof DaySpend>;

/**
 * The tenant's ledger of one UTC day (key `ledger.<day>` of `fleet_budgets`): the spend of the
 * sessions deleted or archived since (the day's totals keep counting it once their session records
 * are gone; the ledger says how much of the total they are). `pending` lists the operations (the lifecycle command ids) whose amount is in the
 * total and that have not settled yet: an operation applies its amount only when its id is absent, so
 * applying it again after a crash changes nothing; it removes its id once its outcome is recorded.
 */
export const LedgerRecord = z.object({
  day: UtcDay,
  ...Spend.shape,
  pending: z.array(z.string().min(1).max(256)),
});
export type LedgerRecord = z.infer<typeof LedgerRecord>;

/**
 * The ledger after operation `opId` adds `amount` (`sign` -1 takes it away: a restore), or `null`
 * when `opId` is already applied. Totals never go below zero.
 */
export function applyToLedger(
  record: LedgerRecord | undefined,
  day: string,
  opId: string,
  amount: Spend,
  sign: 1 | -1,
): LedgerRecord | null {
  const current = record ?? { day, ...emptySpend(), pending: [] };
  if (current.pending.includes(opId)) return null;
  const at = (a: number, b: number) => Math.max(0, a + sign * b);
  return {
    day,
    inputTokens: at(current.inputTokens, amount.inputTokens),
    outputTokens: at(current.outputTokens, amount.outputTokens),
    totalTokens: at(current.totalTokens, amount.totalTokens),
    costUsd: at(current.costUsd, amount.costUsd),
    pending: [...current.pending, opId],
  };
}

/** The ledger with `opId` settled (no longer pending), or `null` when it is not pending. */
export function settleLedger(record: LedgerRecord | undefined, opId: string): LedgerRecord | null {
  if (!record?.pending.includes(opId)) return null;
  return { ...record, pending: record.pending.filter((id) => id !== opId) };
}

/** The spend a ledger record counts. */
export const ledgerSpend = (record: LedgerRecord): Spend => ({
  inputTokens: record.inputTokens,
  outputTokens: record.outputTokens,
  totalTokens: record.totalTokens,
  costUsd: record.costUsd,
});
