// The tenant's daily budget as the client reads it from KV `fleet_budgets` (limits, today's records).
import {
  addSpend,
  BUDGET_KEYS,
  BudgetLimits,
  emptySpend,
  KV_BUCKETS,
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
  total: Spend;
  sessions: Map<string, Spend>;
}

/** Reads `limits` and the `spend.<day>.*` records (default day: today, UTC). Throws when the bucket is unreadable. */
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
  return { day, limits: limits?.success ? limits.data : undefined, total, sessions };
}
