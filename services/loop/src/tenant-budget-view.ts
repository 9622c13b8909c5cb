// The tenant's daily budget on a loop worker: its limits (KV `fleet_budgets`) and its day spend as
// the partitions' totals say (KV `fleet_spend_totals`, PROTOCOL changes 43 and 60), and the counting
// of spend.
import {
  BUDGET_KEYS,
  BudgetLimits,
  type DaySpend,
  emptySpend,
  KV_BUCKETS,
  type PartitionDayTotal,
  parseJson,
  type Spend,
  sumTotals,
  utcDayOf,
} from "@fleet/protocol";
import { type FollowKvOptions, followKv, type Logger, type StreamPublisher } from "@fleet/runtime";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import { type CountRequest, createSpendCounter, decodeTotal } from "./spend-counter.js";

/**
 * Watches two things only: key `limits`, and the keys `total.<day>.<p>` (one per partition and day,
 * and they age out after two days) of a bucket that holds nothing else, so what a worker reads at
 * start, what the server scans to answer it, and what the worker holds do not grow with the sessions
 * of the tenant. A session's owner adds what the totals do not count yet of its own fold.
 */
export interface TenantBudgetView {
  /** Resolves once the limits and totals written before now are known. */
  ready: Promise<void>;
  /** The tenant's daily limits (`undefined`: none). */
  limits(): BudgetLimits | undefined;
  /** What the tenant spent on `day` as its partitions' totals count it (deleted sessions included). */
  total(day: string): Spend;
  /** Counts a session's spend of `day` into its partition's total (see `SpendCounter.count`). */
  count(day: string, partition: number, request: CountRequest): Promise<void>;
  /**
   * A deletion's spend: the totals brought up to `spend` for the days they count the session on,
   * then the session's records of those days removed. Rejects when the bucket is unwritable.
   */
  close(sessionId: string, partition: number, spend: readonly DaySpend[], events: number): Promise<void>;
  /** Removes the session's records of those days (a late write after a deletion). */
  removeRecords(sessionId: string, days: readonly string[]): Promise<void>;
  stop(): void;
}

export interface TenantBudgetViewOptions {
  budgets: KV;
  /** `fleet_spend`: the sessions' records (written, never watched). */
  spend: KV;
  /** `fleet_spend_totals`: the partitions' totals (watched). */
  totals: KV;
  /** Writes the totals and the records (see `SpendBuckets`). */
  publisher: StreamPublisher;
  jsm: JetStreamManager;
  logger?: Logger;
  now?: () => number;
  follow?: FollowKvOptions;
}

const decodeLimits = (value: Uint8Array): BudgetLimits | undefined => {
  const json = parseJson(value);
  if (!json.ok) return undefined;
  const parsed = BudgetLimits.safeParse(json.value);
  return parsed.success ? parsed.data : undefined;
};
const TOTAL = /^total\.(\d{4}-\d{2}-\d{2})\.(\d+)$/;
const DAY_MS = 86_400_000;

export function watchTenantBudget(opts: TenantBudgetViewOptions): TenantBudgetView {
  const now = opts.now ?? Date.now;
  let limits: BudgetLimits | undefined;
  /** Per day, per partition: the newest total known (its revision) from the watch or this worker's writes. */
  const totals = new Map<string, Map<number, { revision: number; total: Spend }>>();
  const sums = new Map<string, Spend>();
  /** `total` is read only for a revision newer than the one known (this worker's writes are known first). */
  const put = (key: string, revision: number, total: () => PartitionDayTotal | undefined) => {
    const m = TOTAL.exec(key);
    if (!m) return;
    const day = m[1] as string;
    const partition = Number(m[2]);
    let ofDay = totals.get(day);
    if (!ofDay) {
      // Days older than the bucket keeps are gone from it (nats-server 2.9 tells no watcher).
      const oldest = utcDayOf(now() - KV_BUCKETS.spend.ttlMs);
      for (const d of [...totals.keys()].filter((k) => k < oldest)) {
        totals.delete(d);
        sums.delete(d);
      }
      ofDay = new Map();
      totals.set(day, ofDay);
    }
    if ((ofDay.get(partition)?.revision ?? 0) >= revision) return;
    ofDay.set(partition, { revision, total: total() ?? emptySpend() });
    sums.set(day, sumTotals([...ofDay.values()].map((t) => t.total)));
  };
  const limitsFollower = followKv(
    opts.budgets,
    BUDGET_KEYS.limits,
    (_key, operation, value) => {
      limits = operation === "PUT" ? decodeLimits(value) : undefined;
    },
    opts.follow,
  );
  const totalsFollower = followKv(
    opts.totals,
    "total.>",
    (key, operation, value, revision) =>
      put(key, revision, () => (operation === "PUT" ? decodeTotal(value) : undefined)),
    opts.follow,
  );
  const counter = createSpendCounter(
    { totals: opts.totals, records: opts.spend, publisher: opts.publisher },
    opts.jsm,
    {
      onTotal: (key, revision, total) => put(key, revision, () => total),
      ...(opts.logger ? { logger: opts.logger } : {}),
    },
  );
  return {
    ready: Promise.all([limitsFollower.ready, totalsFollower.ready]).then(() => undefined),
    limits: () => limits,
    total: (day) => sums.get(day) ?? emptySpend(),
    count: (day, partition, request) => counter.count(day, partition, request),
    async close(sessionId, partition, spend, events) {
      const oldest = utcDayOf(now() - DAY_MS);
      await Promise.all(
        spend
          .filter((s) => s.day >= oldest)
          .map(({ day, ...spent }) =>
            counter.count(day, partition, { sessionId, events, spend: spent, mode: "catch_up" }),
          ),
      );
      await counter.removeRecords(
        sessionId,
        spend.map((s) => s.day),
      );
    },
    removeRecords: (sessionId, days) => counter.removeRecords(sessionId, days),
    stop() {
      limitsFollower.stop();
      totalsFollower.stop();
    },
  };
}
