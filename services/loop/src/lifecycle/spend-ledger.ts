// The tenant's ledger of deleted sessions' spend (`ledger.<day>` of KV `fleet_budgets`), and a
// deleted session's part of the day totals (KV `fleet_spend_totals`, changes 43 and 60).
import {
  applyToLedger,
  BUDGET_KEYS,
  type DaySpend,
  type LedgerRecord as Ledger,
  LedgerRecord,
  parseJson,
  settleLedger,
} from "@fleet/protocol";
import { isWrongLastSequence } from "@fleet/runtime";
import type { KV } from "@nats-io/kv";
import type { TenantBudgetView } from "../tenant-budget-view.js";

export interface SpendLedger {
  /**
   * Adds (`sign` 1) or takes away (-1) each day's spend under operation `opId`, exactly once per day
   * however often it is called: a day whose ledger lists `opId` as pending is left alone.
   */
  apply(opId: string, spend: readonly DaySpend[], sign: 1 | -1): Promise<void>;
  /** Removes `opId` from the pending list of each day (once its outcome is recorded). */
  settle(opId: string, days: readonly string[]): Promise<void>;
  /**
   * A deletion's spend in the day totals: they are brought up to `spend` on the days they count the
   * session, and its `session.<day>.<sessionId>` records are removed, leaving no marker (a purge of
   * each key's subject). The totals keep its spend.
   */
  closeSession(sessionId: string, partition: number, spend: readonly DaySpend[], events: number): Promise<void>;
  /** Removes the session's records of those days again (a write still in flight at the deletion). */
  removeSessionRecords(sessionId: string, days: readonly string[]): Promise<void>;
}

const MAX_ATTEMPTS = 50;

export function createSpendLedger(kv: KV, totals: Pick<TenantBudgetView, "close" | "removeRecords">): SpendLedger {
  /** A compare-and-set of one day's ledger, retried while other writers move it. */
  async function change(day: string, next: (current: Ledger | undefined) => Ledger | null): Promise<void> {
    const key = BUDGET_KEYS.ledger(day);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const entry = await kv.get(key);
      const current = entry?.operation === "PUT" ? decode(entry.value) : undefined;
      const value = next(current);
      if (value === null) return;
      try {
        if (entry) await kv.update(key, JSON.stringify(value), entry.revision);
        else await kv.create(key, JSON.stringify(value));
        return;
      } catch (err) {
        if (!isWrongLastSequence(err) && !/exists/i.test((err as Error).message)) throw err;
      }
    }
    throw new Error(`ledger ${key}: too many concurrent writers`);
  }
  return {
    async apply(opId, spend, sign) {
      for (const s of spend) await change(s.day, (current) => applyToLedger(current, s.day, opId, s, sign));
    },
    async settle(opId, days) {
      for (const day of days) await change(day, (current) => settleLedger(current, opId));
    },
    closeSession: (sessionId, partition, spend, events) => totals.close(sessionId, partition, spend, events),
    removeSessionRecords: (sessionId, days) => totals.removeRecords(sessionId, days),
  };
}

function decode(value: Uint8Array): Ledger | undefined {
  const json = parseJson(value);
  if (!json.ok) return undefined;
  const parsed = LedgerRecord.safeParse(json.value);
  return parsed.success ? parsed.data : undefined;
}
