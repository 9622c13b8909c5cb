// Reading a range of one subject's history: direct gets, and one bounded ordered read when it is long.
import { readSubject } from "@fleet/runtime";
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";

/** One stored message of a subject. */
export interface HistoryRecord {
  seq: number;
  subject: string;
  data: Uint8Array;
  /** Its `Nats-Msg-Id`, `undefined` when it has none. */
  msgId: string | undefined;
}

/** What a history read reads with. */
export interface HistoryConnection {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
}

/** `batch`: messages per pull of the ordered read (`readSubject`'s default when unset). */
export interface HistoryRange {
  fromSeq: number;
  toSeq?: number;
  batch?: number;
}

/**
 * A read takes at most this many messages by direct get (`next_by_subj`), then the rest up to the
 * range's end in one bounded ordered read (one short-lived consumer), then direct gets again for
 * what was appended meanwhile. A resume over a few events therefore creates no consumer.
 */
export const DIRECT_HISTORY_MAX = 32;

/**
 * The messages of `subject` with `fromSeq <= seq <= toSeq` (default: to the subject's end when the
 * read reaches it), in stream order, each once. Rejects when the stream cannot be read.
 */
export async function* readHistory(
  conn: HistoryConnection,
  stream: string,
  subject: string,
  range: HistoryRange,
): AsyncGenerator<HistoryRecord> {
  const toSeq = range.toSeq ?? Number.POSITIVE_INFINITY;
  let next = Math.max(1, range.fromSeq);
  let direct = 0;
  let ordered = false;
  while (next <= toSeq) {
    if (!ordered && direct >= DIRECT_HISTORY_MAX) {
      ordered = true;
      const bounded = {
        fromSeq: next,
        ...(Number.isFinite(toSeq) ? { toSeq } : {}),
        ...(range.batch ? { batch: range.batch } : {}),
      };
      for await (const r of readSubject(conn.js, conn.jsm, stream, subject, bounded)) {
        next = r.seq + 1;
        yield { seq: r.seq, subject: r.subject, data: r.data, msgId: r.msgId };
      }
      continue;
    }
    const msg = await conn.jsm.direct.getMessage(stream, { seq: next, next_by_subj: subject });
    if (!msg || msg.seq > toSeq) return;
    direct++;
    next = msg.seq + 1;
    yield { seq: msg.seq, subject: msg.subject, data: msg.data, msgId: msg.header?.get("Nats-Msg-Id") || undefined };
  }
}
