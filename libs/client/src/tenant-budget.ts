// The tenant's daily budget: its limits (KV `fleet_budgets`, read and written), the day's totals and
// sessions' records (KV `fleet_spend_totals` and `fleet_spend`, changes 43 and 60) and the day's
// ledger of deleted sessions.
import {
  addSpend,
  BUDGET_KEYS,
  BudgetLimits,
  emptySpend,
  KV_BUCKETS,
  LedgerRecord,
  ledgerSpend,
  PartitionDayTotal,
  SPEND_KEYS,
  type Spend,
  sumTotals,
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
  /**
   * Everything spent on `day`: the sum of the partitions' totals, which count deleted sessions too
   * (for a day without totals, from before them: the sessions' records and the ledger).
   */
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
 * Reads `limits`, the day's totals and session records, and the day's ledger (default day: today,
 * UTC). Throws when a bucket is unreadable.
 */
export async function readTenantBudget(nc: NatsConnection, day = utcDayOf(Date.now())): Promise<TenantBudgetReport> {
  const kvm = new Kvm(nc);
  const kv = await kvm.open(KV_BUCKETS.budgets.name);
  const spendKv = await kvm.open(KV_BUCKETS.spend.name);
  const totalsKv = await kvm.open(KV_BUCKETS.spendTotals.name);
  const limitsEntry = await kv.get(BUDGET_KEYS.limits);
  const limits = limitsEntry?.operation === "PUT" ? BudgetLimits.safeParse(limitsEntry.json()) : undefined;
  const sessions = new Map<string, Spend>();
  let recorded = emptySpend();
  for (const entry of await readKvEntries(spendKv, SPEND_KEYS.sessionsOfDay(day))) {
    const record = TenantSpendRecord.safeParse(entry.json());
    if (!record.success) continue;
    const { inputTokens, outputTokens, totalTokens, costUsd } = record.data;
    const spend = { inputTokens, outputTokens, totalTokens, costUsd };
    sessions.set(record.data.sessionId, spend);
    recorded = addSpend(recorded, spend);
  }
  const totals: Spend[] = [];
  for (const entry of await readKvEntries(totalsKv, SPEND_KEYS.totalsOfDay(day))) {
    const total = PartitionDayTotal.safeParse(entry.json());
    if (total.success) totals.push(total.data);
  }
  const ledgerEntry = await kv.get(BUDGET_KEYS.ledger(day));
  const ledger = ledgerEntry?.operation === "PUT" ? LedgerRecord.safeParse(ledgerEntry.json()) : undefined;
  const deleted = ledger?.success ? ledgerSpend(ledger.data) : emptySpend();
  const total = totals.length > 0 ? sumTotals(totals) : addSpend(recorded, deleted);
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
