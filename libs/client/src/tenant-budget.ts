// The tenant's daily budget in KV `fleet_budgets`: its limits (read and written) and the days' spend records.
import {
  addSpend,
  BUDGET_KEYS,
  BudgetLimits,
  emptySpend,
  KV_BUCKETS,
  LedgerRecord,
  ledgerSpend,
  type Spend,
  TenantSpendRecord,
  utcDayOf,
} from "@fleet/protocol";
import { readKvEntries } from "@fleet/runtime";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";

/** What the tenant spent on one UTC day, by session and in total, and its daily limits. */
export interface TenantBudgetReport {
  day: string;
  /** `undefined`: the tenant has no daily limits. */
  limits: BudgetLimits | undefined;
  /** Everything spent on `day`: the sessions' records and the ledger. */
  total: Spend;
  sessions: Map<string, Spend>;
  /** What sessions deleted or archived since spent on `day` (the day's ledger). */
  deleted: Spend;
}

/** The report's sessions with their spend, the most expensive first (then the most tokens). */
export function sessionsBySpend(report: TenantBudgetReport): Array<{ sessionId: string } & Spend> {
  return [...report.sessions]
    .map(([sessionId, spend]) => ({ sessionId, ...spend }))
    .sort((a, b) => b.costUsd - a.costUsd || b.totalTokens - a.totalTokens);
}

/**
 * Reads `limits`, the `spend.<day>.*` records and the day's ledger (default day: today, UTC).
 * Throws when the bucket is unreadable.
 */
export async function readTenantBudget(nc: NatsConnection, day = utcDayOf(Date.now())): Promise<TenantBudgetReport> {
  const kv = await new Kvm(nc).open(KV_BUCKETS.budgets.name);
  const limitsEntry = await kv.get(BUDGET_KEYS.limits);
  const limits = limitsEntry?.operation === "PUT" ? BudgetLimits.safeParse(limitsEntry.json()) : undefined;
  const sessions = new Map<string, Spend>();
  let total = emptySpend();
  for (const entry of await readKvEntries(kv, BUDGET_KEYS.spendOfDay(day))) {
    if (entry.operation !== "PUT") continue;
    const record = TenantSpendRecord.safeParse(entry.json());
    if (!record.success) continue;
    const { inputTokens, outputTokens, totalTokens, costUsd } = record.data;
    const spend = { inputTokens, outputTokens, totalTokens, costUsd };
    sessions.set(record.data.sessionId, spend);
    total = addSpend(total, spend);
  }
  const ledgerEntry = await kv.get(BUDGET_KEYS.ledger(day));
  const ledger = ledgerEntry?.operation === "PUT" ? LedgerRecord.safeParse(ledgerEntry.json()) : undefined;
  const deleted = ledger?.success ? ledgerSpend(ledger.data) : emptySpend();
  total = addSpend(total, deleted);
  return { day, limits: limits?.success ? limits.data : undefined, total, sessions, deleted };
}

/**
 * Writes the tenant's daily limits; `null` deletes them (the tenant then has no limit). The loop
 * workers watch the key, so the next check of every session uses them. NATS lets only a tenant's
 * operator write it.
 */
export async function writeTenantLimits(nc: NatsConnection, limits: BudgetLimits | null): Promise<void> {
  const kv = await new Kvm(nc).open(KV_BUCKETS.budgets.name);
  if (limits === null) await kv.delete(BUDGET_KEYS.limits);
  else await kv.put(BUDGET_KEYS.limits, JSON.stringify(limits));
}
