// The tenant's daily budget: its limits and every session's spend per UTC day, from KV `fleet_budgets`.
import {
  addSpend,
  BUDGET_KEYS,
  BudgetLimits,
  emptySpend,
  LedgerRecord,
  ledgerSpend,
  parseJson,
  type Spend,
  TenantSpendRecord,
} from "@fleet/protocol";
import { type FollowKvOptions, followKv } from "@fleet/runtime";
import type { KV } from "@nats-io/kv";

/**
 * A watch of KV `fleet_budgets`. Each session's owner writes the session's own spend of a day, folded
 * from its log (absolute values, not increments), so writing a record again after a crash changes
 * nothing and a new owner that folds the log writes the same figure. A record only replaces one
 * that counted fewer of the session's events.
 */
export interface TenantBudgetView {
  /** Resolves once the records written before now are known. */
  ready: Promise<void>;
  /** The tenant's daily limits (`undefined`: none). */
  limits(): BudgetLimits | undefined;
  /**
   * What the tenant spent on `day`: every session's record, with `sessionId`'s replaced by
   * `session` (its fold, which may be ahead of its record), plus the day's ledger (what deleted and
   * archived sessions spent).
   */
  spent(day: string, sessionId: string, session: Spend | undefined): Spend;
  /** Writes a session's spend of a day unless a record with as many events is there. Never throws. */
  record(record: TenantSpendRecord): Promise<void>;
  stop(): void;
}

const decodeJson =
  <T>(schema: { safeParse(v: unknown): { success: true; data: T } | { success: false } }) =>
  (value: Uint8Array): T | undefined => {
    const json = parseJson(value);
    if (!json.ok) return undefined;
    const parsed = schema.safeParse(json.value);
    return parsed.success ? parsed.data : undefined;
  };
const decodeRecord = decodeJson(TenantSpendRecord);
const decodeLimits = decodeJson(BudgetLimits);
const decodeLedger = decodeJson(LedgerRecord);
const LEDGER_PREFIX = BUDGET_KEYS.ledger("");

export function watchTenantBudget(kv: KV, follow: FollowKvOptions = {}): TenantBudgetView {
  let limits: BudgetLimits | undefined;
  const records = new Map<string, TenantSpendRecord>();
  /** The ledger of each day (deleted sessions' spend). */
  const ledgers = new Map<string, Spend>();
  /** Sum of the records of each day, kept with every change (the guard reads it at every delta). */
  const totals = new Map<string, Spend>();
  const negate = (s: Spend): Spend => ({
    inputTokens: -s.inputTokens,
    outputTokens: -s.outputTokens,
    totalTokens: -s.totalTokens,
    costUsd: -s.costUsd,
  });
  const put = (key: string, record: TenantSpendRecord | undefined) => {
    const old = records.get(key);
    if (old) totals.set(old.day, addSpend(totals.get(old.day) ?? emptySpend(), negate(old)));
    if (!record) {
      records.delete(key);
      return;
    }
    records.set(key, record);
    totals.set(record.day, addSpend(totals.get(record.day) ?? emptySpend(), record));
  };
  const follower = followKv(
    kv,
    undefined,
    (key, operation, value) => {
      if (key === BUDGET_KEYS.limits) {
        limits = operation === "PUT" ? decodeLimits(value) : undefined;
        return;
      }
      if (key.startsWith(LEDGER_PREFIX)) {
        const ledger = operation === "PUT" ? decodeLedger(value) : undefined;
        if (ledger) ledgers.set(ledger.day, ledgerSpend(ledger));
        else ledgers.delete(key.slice(LEDGER_PREFIX.length));
        return;
      }
      if (operation !== "PUT") {
        put(key, undefined);
        return;
      }
      const parsed = decodeRecord(value);
      const known = records.get(key);
      if (parsed && (!known || known.events <= parsed.events)) put(key, parsed);
    },
    follow,
  );
  return {
    ready: follower.ready,
    limits: () => limits,
    spent(day, sessionId, session) {
      const total = addSpend(totals.get(day) ?? emptySpend(), ledgers.get(day) ?? emptySpend());
      const recorded = records.get(BUDGET_KEYS.spend(day, sessionId));
      if (!session || !recorded) return session ? addSpend(total, session) : total;
      return addSpend(addSpend(total, negate(recorded)), session);
    },
    async record(record) {
      const key = BUDGET_KEYS.spend(record.day, record.sessionId);
      const data = JSON.stringify(record);
      for (let attempt = 0; attempt < 3; attempt++) {
        try {
          const current = await kv.get(key);
          if (current && current.operation === "PUT") {
            const old = decodeRecord(current.value);
            if (old && old.events >= record.events) return;
            await kv.update(key, data, current.revision);
          } else {
            await kv.create(key, data);
          }
          if ((records.get(key)?.events ?? -1) < record.events) put(key, record);
          return;
        } catch {
          // Another writer got there first (a revision conflict): read again.
        }
      }
    },
    stop: () => follower.stop(),
  };
}
