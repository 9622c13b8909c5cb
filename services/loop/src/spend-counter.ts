// Counts sessions' spend into their partition's day total (PROTOCOL changes 43, 60): revision-checked
// updates of `total.<day>.<p>` in KV `fleet_spend_totals`, then the sessions' `session.<day>.<sid>`
// records in KV `fleet_spend`.
import {
  KV_BUCKETS,
  PartitionDayTotal,
  parseJson,
  planCount,
  replacesRecord,
  SPEND_KEYS,
  type Spend,
  type SpendIntent,
  TenantSpendRecord,
} from "@fleet/protocol";
import { type Logger, type StreamPublisher, sleep, WRONG_LAST_SEQUENCE } from "@fleet/runtime";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { KV, KvEntry } from "@nats-io/kv";

export interface CountRequest extends SpendIntent {
  /**
   * Called once the total counts the intent (right after the total is written, before the record
   * is): what the total now counts of the session (`undefined`: nothing, a `catch_up` of a session
   * it never counted).
   */
  onCounted?: (counted: Spend | undefined) => void;
}

export interface SpendCounter {
  /**
   * Counts a session's spend of `day` into the total of `partition`, and writes its record. Requests
   * of one total are applied in order, several in one update; a session's later request replaces
   * its earlier one that has not started. Resolves once the record is written; rejects when the
   * bucket stays unwritable (the next request, or the session's next load, counts it then).
   */
  count(day: string, partition: number, request: CountRequest): Promise<void>;
  /** Removes the session's records of those days, leaving nothing on their subjects (a purge). */
  removeRecords(sessionId: string, days: readonly string[]): Promise<void>;
}

export interface SpendCounterOptions {
  /** A total this worker wrote, with its revision (the view shows it before its watch does). */
  onTotal?: (key: string, revision: number, total: PartitionDayTotal) => void;
  logger?: Logger;
  /** Wait before retrying a failed update (default 200 ms, doubling, 5 attempts). */
  retryMs?: number;
  /**
   * How long the removal of settled pending entries waits for counts to go with it in one update
   * (default 200 ms); a count arriving meanwhile takes it along.
   */
  settleDelayMs?: number;
}

interface Waiting {
  request: CountRequest;
  done: Array<{ resolve: () => void; reject: (err: unknown) => void }>;
}

interface TotalQueue {
  day: string;
  partition: number;
  waiting: Map<string, Waiting>;
  settled: Array<{ sessionId: string; events: number }>;
  running: boolean;
  /**
   * The total as this worker last wrote or read it: the next update is tried at its revision first,
   * which fails if anyone wrote since (then the total is read again).
   */
  known?: { entry: KvEntryLike | null; total: PartitionDayTotal | undefined };
}

/** A session's record as read: its entry (null: no message), and its value when that is a valid record. */
interface RecordRead {
  entry: KvEntry | null;
  existing: TenantSpendRecord | undefined;
}

/** What an update needs of a total's entry: whether one exists, and its revision. */
interface KvEntryLike {
  revision: number;
}

const CAS_ATTEMPTS = 50;
const FLUSH_ATTEMPTS = 5;

/**
 * The buckets of the day's spend: the partitions' totals, and the sessions' records, read through
 * the buckets and written through `publisher` (a revision-checked put is a publish to the key's
 * subject with its expected last subject sequence; the ack's sequence is the new revision).
 */
export interface SpendBuckets {
  totals: KV;
  records: KV;
  publisher: StreamPublisher;
}

const encoder = new TextEncoder();

export function createSpendCounter(
  buckets: SpendBuckets,
  jsm: JetStreamManager,
  opts: SpendCounterOptions = {},
): SpendCounter {
  const { totals, records: kv, publisher } = buckets;

  /**
   * Writes `data` as the value of `key` in `bucket` if the key's revision is `revision` (0: the key
   * has no message): its new revision, or `conflict` when it is not. Throws on any other failure.
   */
  async function writeKey(bucket: string, key: string, data: string, revision: number): Promise<number | "conflict"> {
    const ack = await publisher.publish(`$KV.${bucket}.${key}`, encoder.encode(data), {
      expectLastSubjectSequence: revision,
    });
    if (ack.ok) return ack.seq;
    if (ack.code === WRONG_LAST_SEQUENCE) return "conflict";
    throw new Error(`write of ${bucket} ${key}: ${ack.error}`);
  }
  const queues = new Map<string, TotalQueue>();
  const retryMs = opts.retryMs ?? 200;
  const settleDelayMs = opts.settleDelayMs ?? 200;

  async function readRecord(day: string, sessionId: string): Promise<KvEntry | null> {
    return kv.get(SPEND_KEYS.session(day, sessionId));
  }

  /** One revision-checked update of a total with `batch` and `settled`; then the batch's records. */
  async function apply(queue: TotalQueue, batch: Waiting[], settled: TotalQueue["settled"]): Promise<void> {
    const key = SPEND_KEYS.total(queue.day, queue.partition);
    for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
      let entry: KvEntryLike | null;
      let current: PartitionDayTotal | undefined;
      const cached = attempt === 0 && queue.known !== undefined;
      if (queue.known && cached) ({ entry, total: current } = queue.known);
      else {
        const read = await totals.get(key);
        entry = read;
        current = read?.operation === "PUT" ? decodeTotal(read.value) : undefined;
      }
      // Read after the total: a record written before the total's settling update is seen.
      const read = await Promise.all(batch.map((w) => readRecord(queue.day, w.request.sessionId)));
      const records = new Map<string, TenantSpendRecord | undefined>();
      const recordEntries = new Map<string, RecordRead>();
      batch.forEach((w, i) => {
        const e = read[i] ?? null;
        const existing = e?.operation === "PUT" ? decodeRecord(e.value) : undefined;
        recordEntries.set(w.request.sessionId, { entry: e, existing });
        records.set(w.request.sessionId, existing);
      });
      const plan = planCount(
        queue.day,
        queue.partition,
        current,
        records,
        batch.map((w) => w.request),
        settled,
      );
      // A decision to change nothing is taken on the total as it is now, not as this worker last saw it.
      if (!plan.total && cached) {
        queue.known = undefined;
        continue;
      }
      if (plan.total) {
        let revision: number | "conflict";
        try {
          revision = await writeKey(KV_BUCKETS.spendTotals.name, key, JSON.stringify(plan.total), entry?.revision ?? 0);
        } catch (err) {
          queue.known = undefined;
          throw err;
        }
        if (revision === "conflict") {
          queue.known = undefined;
          continue;
        }
        queue.known = { entry: { revision }, total: plan.total };
        opts.onTotal?.(key, revision, plan.total);
      } else queue.known = { entry, total: current };
      for (const w of batch) w.request.onCounted?.(plan.counted.get(w.request.sessionId));
      await Promise.all(
        plan.records.map((r) => writeRecord(r, recordEntries.get(r.sessionId) ?? { entry: null, existing: undefined })),
      );
      // A record written (or one already as far) settles its pending entry at the next update.
      for (const r of plan.records) queue.settled.push({ sessionId: r.sessionId, events: r.events });
      return;
    }
    throw new Error(`spend total ${key}: too many concurrent writers`);
  }

  /** Writes a session record unless one with as many events is there; `first` is the record as read last. */
  async function writeRecord(record: TenantSpendRecord, first: RecordRead): Promise<void> {
    const key = SPEND_KEYS.session(record.day, record.sessionId);
    const data = JSON.stringify(record);
    let { entry, existing } = first;
    for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
      if (!replacesRecord(existing, record)) return;
      if ((await writeKey(KV_BUCKETS.spend.name, key, data, entry?.revision ?? 0)) !== "conflict") return;
      entry = await kv.get(key);
      existing = entry?.operation === "PUT" ? decodeRecord(entry.value) : undefined;
    }
    throw new Error(`spend record ${key}: too many concurrent writers`);
  }

  /**
   * Applies the queue until it is empty. A request resolves once the update after its own (the one
   * that removes its pending entry) is written too, so a deletion that removes the records next
   * leaves no entry that a new session of the same id would be counted against.
   */
  async function flush(queue: TotalQueue): Promise<void> {
    queue.running = true;
    let failures = 0;
    let settling: Waiting[] = [];
    const resolve = (ws: Waiting[]) => {
      for (const w of ws) for (const d of w.done) d.resolve();
    };
    try {
      while (queue.waiting.size > 0 || queue.settled.length > 0) {
        if (queue.waiting.size === 0) await sleep(settleDelayMs);
        const batch = [...queue.waiting.values()];
        queue.waiting.clear();
        const settled = queue.settled.splice(0);
        try {
          await apply(queue, batch, settled);
          failures = 0;
          resolve(settling);
          settling = batch;
        } catch (err) {
          failures++;
          if (failures >= FLUSH_ATTEMPTS) {
            opts.logger?.warn(
              { evt: "spend_count_failed", day: queue.day, partition: queue.partition, error: String(err) },
              "could not count spend into the day's total",
            );
            // Counted already: only their pending entries stay (a later update removes them).
            resolve(settling);
            settling = [];
            for (const w of batch) for (const d of w.done) d.reject(err);
            failures = 0;
            continue;
          }
          // Back in the queue, behind nothing newer of the same session.
          for (const w of batch) {
            const newer = queue.waiting.get(w.request.sessionId);
            if (newer) newer.done.push(...w.done);
            else queue.waiting.set(w.request.sessionId, w);
          }
          queue.settled.push(...settled);
          await sleep(retryMs * 2 ** (failures - 1));
        }
      }
      resolve(settling);
    } finally {
      queue.running = false;
      if (queue.waiting.size === 0 && queue.settled.length === 0) {
        queues.delete(SPEND_KEYS.total(queue.day, queue.partition));
      }
    }
  }

  return {
    count(day, partition, request) {
      const key = SPEND_KEYS.total(day, partition);
      let queue = queues.get(key);
      if (!queue) {
        queue = { day, partition, waiting: new Map(), settled: [], running: false };
        queues.set(key, queue);
      }
      const q = queue;
      return new Promise<void>((resolve, reject) => {
        const earlier = q.waiting.get(request.sessionId);
        // The later fold replaces the earlier (a restore's baseline stays with it).
        const merged: CountRequest =
          earlier?.request.mode === "restore" && request.mode !== "restore"
            ? {
                ...request,
                mode: "restore",
                ...(earlier.request.baseline ? { baseline: earlier.request.baseline } : {}),
              }
            : request;
        const done = [...(earlier?.done ?? []), { resolve, reject }];
        q.waiting.set(request.sessionId, { request: merged, done });
        if (!q.running) void flush(q);
      });
    },
    async removeRecords(sessionId, days) {
      const stream = `KV_${KV_BUCKETS.spend.name}`;
      for (const day of days) {
        await jsm.streams.purge(stream, {
          filter: `$KV.${KV_BUCKETS.spend.name}.${SPEND_KEYS.session(day, sessionId)}`,
        });
      }
    },
  };
}

function decodeJson<T>(schema: { safeParse(v: unknown): { success: true; data: T } | { success: false } }) {
  return (value: Uint8Array): T | undefined => {
    const json = parseJson(value);
    if (!json.ok) return undefined;
    const parsed = schema.safeParse(json.value);
    return parsed.success ? parsed.data : undefined;
  };
}
export const decodeTotal = decodeJson(PartitionDayTotal);
const decodeRecord = decodeJson(TenantSpendRecord);
