// The tenant's day spend as per-partition totals in KV `fleet_spend_totals` (PROTOCOL changes 43, 60): the keys,
// the records, and the pure plan of one revision-checked update of a partition's total.
import { z } from "zod";
import { addSpend, emptySpend, Spend, type TenantSpendRecord, UtcDay } from "./budget.js";

/**
 * Keys of KV `fleet_spend_totals` and `fleet_spend` (every key ages out with its bucket's max age,
 * two days, so a day's figures stay readable through the next UTC day and are gone a day later):
 * `total.<YYYY-MM-DD>.<partition>` of `fleet_spend_totals` holds what the sessions of one partition
 * spent on that UTC day (`PartitionDayTotal`, written by the partition's owner);
 * `session.<YYYY-MM-DD>.<sessionId>` of `fleet_spend` holds one session's spend of the day as counted
 * in its partition's total (`TenantSpendRecord`). `migrated` of `fleet_spend_totals` marks that the
 * totals kept in `fleet_spend` before change 60 were moved (a loop worker rewrites it at start).
 */
export const SPEND_KEYS = {
  total: (day: string, partition: number) => `total.${day}.${partition}`,
  totalsOfDay: (day: string) => `total.${day}.*`,
  totalsAll: "total.>",
  session: (day: string, sessionId: string) => `session.${day}.${sessionId}`,
  sessionsOfDay: (day: string) => `session.${day}.>`,
  migrated: "migrated",
} as const;

/**
 * A session's count that is in a partition's total but possibly not yet in its `session.<day>.<sid>`
 * record: the record is written after the total, and the entry is removed once it is.
 */
export const PendingCount = z.object({
  sessionId: z.string().min(1),
  events: z.number().int().nonnegative(),
  ...Spend.shape,
});
export type PendingCount = z.infer<typeof PendingCount>;

/**
 * What the sessions of partition `partition` spent on UTC day `day`: the sum of what each session's
 * owner counted (its `session.<day>.<sid>` record, or its pending entry when that is ahead).
 * Deleted sessions' spend stays in it.
 */
export const PartitionDayTotal = z.object({
  day: UtcDay,
  partition: z.number().int().nonnegative(),
  ...Spend.shape,
  pending: z.array(PendingCount),
});
export type PartitionDayTotal = z.infer<typeof PartitionDayTotal>;

/**
 * A session's spend of one day to count into its partition's total. `count`: the owner's fold (after
 * an LLM call's event, or a load). `catch_up`: a deletion brings the total to the tombstone's spend,
 * only for a session the total already counts something of (a deletion resumed after its records
 * were removed must not count them again). `restore`: a restored session's history, which its
 * deletion left counted (`baseline`, the archive's spend of the day).
 */
export interface SpendIntent {
  sessionId: string;
  events: number;
  spend: Spend;
  mode: "count" | "catch_up" | "restore";
  baseline?: Spend;
}

/** What the total counts of a session: its pending entry when ahead of its record, else its record. */
export function countedOf(
  total: PartitionDayTotal | undefined,
  record: TenantSpendRecord | undefined,
  sessionId: string,
): { events: number; spend: Spend; pending: boolean } | undefined {
  const entry = total?.pending.find((p) => p.sessionId === sessionId);
  if (entry && (!record || entry.events > record.events))
    return { events: entry.events, spend: spendOf(entry), pending: true };
  return record ? { events: record.events, spend: spendOf(record), pending: false } : undefined;
}

export interface CountPlan {
  /** The total to write with the revision it was read at; `null`: it stays as it is. */
  total: PartitionDayTotal | null;
  /** Session records to write once the total is (each only over a record with fewer events). */
  records: TenantSpendRecord[];
  /** Per intent's session: what the total counts of it after the plan (`undefined`: nothing). */
  counted: Map<string, Spend | undefined>;
}

/**
 * One update of the total of (`day`, `partition`), as read (`current`, `undefined`: no key), with
 * the records of the intents' sessions as read after it. Each intent adds what its spend has over
 * what the total counts of its session (never less than nothing), once: its session's pending entry
 * then holds that count until the record is written, so a writer that dies in between and the next
 * one, which reads the entry, never add it twice. `settled` are counts whose records were written:
 * their pending entries go, as do entries that a record read now shows written.
 */
export function planCount(
  day: string,
  partition: number,
  current: PartitionDayTotal | undefined,
  records: ReadonlyMap<string, TenantSpendRecord | undefined>,
  intents: readonly SpendIntent[],
  settled: readonly { sessionId: string; events: number }[] = [],
): CountPlan {
  let spent = current ? spendOf(current) : emptySpend();
  const pending = new Map((current?.pending ?? []).map((p) => [p.sessionId, p]));
  let changed = false;
  const drop = (sessionId: string, upTo: number) => {
    const entry = pending.get(sessionId);
    if (entry && entry.events <= upTo) {
      pending.delete(sessionId);
      changed = true;
    }
  };
  for (const s of settled) drop(s.sessionId, s.events);
  for (const [sessionId, record] of records) if (record) drop(sessionId, record.events);
  const out: TenantSpendRecord[] = [];
  const counted = new Map<string, Spend | undefined>();
  for (const intent of intents) {
    const known = countedOf(current, records.get(intent.sessionId), intent.sessionId);
    if (!known && intent.mode === "catch_up") {
      counted.set(intent.sessionId, undefined);
      continue;
    }
    const base = known?.spend ?? (intent.mode === "restore" && intent.baseline ? intent.baseline : emptySpend());
    if (known && intent.events <= known.events) {
      counted.set(intent.sessionId, known.spend);
      if (known.pending) out.push(recordOf(day, intent.sessionId, known.events, known.spend));
      continue;
    }
    const delta = over(intent.spend, base);
    spent = addSpend(spent, delta);
    const now = addSpend(base, delta);
    pending.set(intent.sessionId, { sessionId: intent.sessionId, events: intent.events, ...now });
    changed = true;
    counted.set(intent.sessionId, now);
    out.push(recordOf(day, intent.sessionId, intent.events, now));
  }
  const total = changed ? { day, partition, ...spent, pending: [...pending.values()] } : null;
  return { total, records: out, counted };
}

/** Whether `next` may replace the session record `existing` (a record only grows in events). */
export const replacesRecord = (existing: TenantSpendRecord | undefined, next: TenantSpendRecord): boolean =>
  !existing || existing.events < next.events;

/** The tenant's spend of a day: the sum of its partitions' totals. */
export function sumTotals(totals: Iterable<Spend>): Spend {
  let sum = emptySpend();
  for (const t of totals) sum = addSpend(sum, spendOf(t));
  return sum;
}

/** What `a` has over `b`, per field, never below zero. */
function over(a: Spend, b: Spend): Spend {
  return {
    inputTokens: Math.max(0, a.inputTokens - b.inputTokens),
    outputTokens: Math.max(0, a.outputTokens - b.outputTokens),
    totalTokens: Math.max(0, a.totalTokens - b.totalTokens),
    costUsd: Math.max(0, a.costUsd - b.costUsd),
  };
}

const spendOf = (s: Spend): Spend => ({
  inputTokens: s.inputTokens,
  outputTokens: s.outputTokens,
  totalTokens: s.totalTokens,
  costUsd: s.costUsd,
});

const recordOf = (day: string, sessionId: string, events: number, spend: Spend): TenantSpendRecord => ({
  sessionId,
  day,
  events,
  ...spendOf(spend),
});
