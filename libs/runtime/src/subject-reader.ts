import { DeliverPolicy, type JetStreamClient, type JetStreamManager, type StoredMsg } from "@nats-io/jetstream";

export interface StoredRecord {
  seq: number;
  subject: string;
  data: Uint8Array;
  /** `Nats-Msg-Id` header, when present. */
  msgId: string | undefined;
  /** Server timestamp in ms. */
  time: number;
}

/** The stream sequence of the last message on `subject`, or 0 when it has none. */
export async function lastSubjectSeq(jsm: JetStreamManager, stream: string, subject: string): Promise<number> {
  try {
    const msg = await jsm.streams.getMessage(stream, { last_by_subj: subject });
    return msg?.seq ?? 0;
  } catch (err) {
    if (/no message found|not found/i.test((err as Error).message)) return 0;
    throw err;
  }
}

/**
 * The messages of `subject` from `fromSeq` through `last` (the subject's last message, read by the
 * caller), in stream order, found by walking back from `last` by sequence: a message stored with
 * `Nats-Expected-Last-Subject-Sequence: E` has E as its predecessor on the subject (the stream
 * stores it only when the subject's last was E), and a direct get by sequence is an index lookup,
 * where a get `next_by_subj` makes nats-server 2.9 scan every message stored after its start.
 * Null when a message has no such header, a predecessor is not on the subject any more, or the walk
 * would take more than `max` messages: the caller then reads forward.
 */
export async function walkBackSubject(
  jsm: JetStreamManager,
  stream: string,
  subject: string,
  last: StoredMsg,
  fromSeq: number,
  max: number,
): Promise<StoredMsg[] | null> {
  if (last.seq < fromSeq) return [];
  const run: StoredMsg[] = [last];
  for (let head = last; run.length <= max; ) {
    const expected = Number(head.header?.get("Nats-Expected-Last-Subject-Sequence") || Number.NaN);
    if (!Number.isSafeInteger(expected)) return null;
    if (expected < fromSeq) return run.reverse();
    const before = await jsm.direct.getMessage(stream, { seq: expected });
    if (!before || before.subject !== subject) return null;
    run.push(before);
    head = before;
  }
  return null;
}

/** How long a read may wait for its next message before it fails (see `readSubject`). */
export const READ_IDLE_TIMEOUT_MS = 15_000;

/**
 * Reads every message of one subject in stream order, from `fromSeq` (inclusive, default 1) through
 * the subject's last message at call time, or through `toSeq`. Uses an ordered consumer with a single
 * filter subject (nats-server 2.9). `batch`: messages per pull (default 512). `lastSeq`: the
 * subject's last sequence as the caller has just read it (`lastSubjectSeq`), read then instead of
 * here; the read ends there.
 * A read that gets no message for `idleMs` (default READ_IDLE_TIMEOUT_MS) before its end throws: an
 * ordered consumer can stand still for minutes on a 3-node 2.9 cluster after node kills (seen: a
 * session load held a command for 90 s), and the caller's retry makes a fresh one.
 */
export async function* readSubject(
  js: JetStreamClient,
  jsm: JetStreamManager,
  stream: string,
  subject: string,
  opts: { fromSeq?: number; toSeq?: number; batch?: number; idleMs?: number; lastSeq?: number } = {},
): AsyncGenerator<StoredRecord> {
  const last = opts.lastSeq ?? (await lastSubjectSeq(jsm, stream, subject));
  const end = opts.toSeq !== undefined ? Math.min(opts.toSeq, last) : last;
  const from = Math.max(1, opts.fromSeq ?? 1);
  if (end === 0 || from > end) return;
  const consumer = await js.consumers.get(stream, {
    filter_subjects: subject,
    deliver_policy: DeliverPolicy.StartSequence,
    opt_start_seq: from,
  });
  const messages = await consumer.consume({ max_messages: opts.batch ?? 512 });
  const idleMs = opts.idleMs ?? READ_IDLE_TIMEOUT_MS;
  const iterator = messages[Symbol.asyncIterator]();
  let at = from - 1;
  // One timer for the whole read, restarted (`refresh`) each time the read waits for a message, and
  // one promise it rejects. Time the caller holds a record does not count: the timer then ignores
  // its own expiry.
  let timer: NodeJS.Timeout | undefined;
  let waiting = false;
  const stalled = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      if (waiting) {
        reject(new Error(`reading ${subject} stalled: no message for ${idleMs} ms after seq ${at} (end ${end})`));
      }
    }, idleMs);
  });
  stalled.catch(() => undefined);
  try {
    for (;;) {
      timer?.refresh();
      waiting = true;
      const next = await Promise.race([iterator.next(), stalled]);
      waiting = false;
      if (next.done) break;
      const m = next.value;
      at = m.seq;
      if (m.seq > end) break;
      yield {
        seq: m.seq,
        subject: m.subject,
        data: m.data,
        msgId: m.headers?.get("Nats-Msg-Id") || undefined,
        time: Math.floor(m.info.timestampNanos / 1_000_000),
      };
      if (m.seq >= end) break;
    }
  } finally {
    clearTimeout(timer);
    void iterator.return?.();
    await messages.close().catch(() => undefined);
  }
}
