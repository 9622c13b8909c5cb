// A resumable tail of one subject of a stream: the transport under `events()` and command outcomes.
import { walkBackSubject } from "@fleet/runtime";
import type { NatsConnection } from "@nats-io/transport-node";
import { type HistoryConnection, type HistoryRecord, readHistory } from "./history-read.js";
import { type FeedSignal, joinFeed, type LiveRecord } from "./live-feed.js";

/** One stored message of the tailed subject. */
export interface TailRecord {
  seq: number;
  subject: string;
  data: Uint8Array;
}

export interface TailOptions {
  /**
   * First stream sequence to deliver (inclusive, at least 1); a function is called when the
   * iteration starts (the caller may learn it after listening started).
   */
  fromSeq: number | (() => number);
  /** Stops the tail; the iterator then returns normally. */
  signal?: AbortSignal;
  /** Called when the tail read the stream again after a reconnect or a failed read. */
  onResume?: (nextSeq: number, cause: unknown) => void;
}

/** What a tail reads with. */
export interface TailConnection extends HistoryConnection {
  readonly nc: NatsConnection;
  /** Streams that republish stored messages whole on the live path (change 67); default none. */
  readonly liveStreams?: ReadonlySet<string>;
}

const MAX_BACKOFF_MS = 5_000;
/** After the tail starts and after each reconnect, the subject is read to its end again at these delays. */
const RECHECK_MS = [100, 1_000] as const;
/** An idle tail reads to the subject's end this often (a safety net; the live path normally wakes it). */
const IDLE_RECHECK_MS = 30_000;
/** A message heard live but not stored after this long was refused by the stream (fenced or duplicate). */
const HEARD_GIVE_UP_MS = 3_000;
const HEARD_MAX = 1_024;
/** Predecessors a read walks back by sequence from the subject's last before it reads by `next_by_subj` instead. */
const WALK_MAX = 16;
/** Republished records held for a tail that is not reading; past this they are dropped and read again. */
const PENDING_MAX = 1_024;

/**
 * Every message of `subject` from `opts.fromSeq` on, forever (until `signal` aborts, the caller
 * stops iterating, or the connection is closed).
 * Contract: stream sequences are strictly increasing; no message of the subject is skipped and none
 * is delivered twice, across reconnects and server restarts. The live path is a core subscription
 * (shared per connection, see `joinFeed`), made when this is called, before it returns.
 * - A stream that republishes (`conn.liveStreams`, change 67): the subscription hears each stored
 *   message of the subject whole, with its sequence and the subject's previous sequence. One whose
 *   previous sequence was delivered (or is below the start) is delivered as it is, with no read;
 *   one that shows a message was not heard (a reconnect, a core message lost) makes the tail read
 *   the stream from the sequence after the last one delivered first.
 * - Any other stream: the subscription on `subject` is a doorbell, and messages are read from the
 *   stream by direct get `next_by_subj` from the sequence after the last one delivered.
 * Reading the stream (the start, a gap, a long history: see `readHistory`) takes direct gets or one
 * bounded ordered read, so no JetStream consumer exists while the tail waits or follows live
 * messages. A reconnect (messages may have been published while away) makes it read to the
 * subject's end again, as do reads 100 ms and 1 s after the start and after 30 s without a message.
 */
export function tailSubject(
  conn: TailConnection,
  stream: string,
  subject: string,
  opts: TailOptions,
): AsyncGenerator<TailRecord> {
  const { nc, jsm } = conn;
  const signal = opts.signal;
  let next = 1;
  /** `Nats-Msg-Id`s heard live and not read yet, with when they were first heard. */
  const heard = new Map<string, number>();
  /** Stored messages heard on the live path and not delivered yet, in stream order. */
  const pending: LiveRecord[] = [];
  /** Read to the subject's end (set at start, after a reconnect or an id-less live message). */
  let toEnd = true;
  let toEndGeneration = 0;
  const rechecks: NodeJS.Timeout[] = [];
  let wake: (() => void) | undefined;
  const ring = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const readToEnd = () => {
    toEnd = true;
    toEndGeneration++;
    ring();
  };
  const scheduleRechecks = () => {
    for (const ms of RECHECK_MS) {
      const timer = setTimeout(readToEnd, ms);
      timer.unref();
      rechecks.push(timer);
    }
  };
  let reconnected = false;
  const onSignal = (s: FeedSignal) => {
    if (s.kind === "reconnect") {
      reconnected = true;
      scheduleRechecks();
      readToEnd();
    } else if (s.kind === "closed") ring();
    else if (s.kind === "record") {
      if (pending.length >= PENDING_MAX) {
        pending.length = 0;
        readToEnd();
      } else {
        pending.push(s.record);
        ring();
      }
    } else if (!s.msgId) readToEnd();
    else {
      if (heard.size < HEARD_MAX) heard.set(s.msgId, Date.now());
      ring();
    }
  };
  const leave = joinFeed(nc, subject, onSignal, conn.liveStreams?.has(stream) === true);
  const stop = () => {
    leave();
    for (const t of rechecks) clearTimeout(t);
    ring();
  };
  signal?.addEventListener("abort", stop, { once: true });
  scheduleRechecks();
  const done = () => signal?.aborted === true || nc.isClosed();

  /**
   * The subject's last stored message, or null when it has none. An index lookup, where a direct
   * get `next_by_subj` from `next` makes nats-server 2.9 scan every message stored after `next`.
   */
  const directLast = () => jsm.direct.getMessage(stream, { last_by_subj: subject });

  /**
   * Every stored message of the subject from `next` on, in order: none when the subject's last is
   * below `next`; else the walk back from it (normally the one message heard); else `readHistory`.
   */
  async function* readOn(): AsyncGenerator<HistoryRecord> {
    const last = await directLast();
    if (!last || last.seq < next) return;
    const run = await walkBackSubject(jsm, stream, subject, last, next, WALK_MAX);
    if (!run) {
      yield* readHistory(conn, stream, subject, { fromSeq: next });
      return;
    }
    for (const m of run) {
      yield { seq: m.seq, subject: m.subject, data: m.data, msgId: m.header?.get("Nats-Msg-Id") || undefined };
    }
  }

  /** Waits for a live signal, `ms`, or the end of the tail. */
  const waitFor = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        wake = undefined;
        resolve();
      }, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
      if (done()) ring();
    });

  async function* follow(): AsyncGenerator<TailRecord> {
    next = Math.max(1, typeof opts.fromSeq === "function" ? opts.fromSeq() : opts.fromSeq);
    let failures = 0;
    let retryMs = 2;
    /** `next` when a gap before a pending record last made the tail read to the end (0: none). */
    let gapReadAt = 0;
    /** The pending record whose gap the stream could not fill yet, and since when. */
    let unfilled: { record: LiveRecord; since: number } | undefined;
    while (!done()) {
      try {
        if (reconnected) {
          reconnected = false;
          opts.onResume?.(next, new Error("reconnected"));
        }
        while (!done() && (toEnd || heard.size > 0 || pending.length > 0)) {
          if (toEnd) {
            const generation = toEndGeneration;
            for await (const r of readOn()) {
              next = r.seq + 1;
              if (r.msgId) heard.delete(r.msgId);
              yield { seq: r.seq, subject: r.subject, data: r.data };
              if (done()) return;
            }
            failures = 0;
            if (generation === toEndGeneration) toEnd = false;
            continue;
          }
          const record = pending[0];
          if (record) {
            if (record.seq < next) {
              pending.shift();
              continue;
            }
            if (record.lastSeq < next) {
              pending.shift();
              next = record.seq + 1;
              if (record.msgId) heard.delete(record.msgId);
              yield { seq: record.seq, subject: record.subject, data: record.data };
              continue;
            }
            // The subject's message before it was not heard: read the stream up to it first. Read
            // to the end from here already (a replica behind answered): wait a little, then again;
            // after HEARD_GIVE_UP_MS the stream no longer has it (a purged subject): drop the record.
            if (gapReadAt === next) {
              if (unfilled?.record !== record) unfilled = { record, since: Date.now() };
              if (Date.now() - unfilled.since <= HEARD_GIVE_UP_MS) break;
              pending.shift();
              continue;
            }
            gapReadAt = next;
            toEnd = true;
            continue;
          }
          // Heard live: read what the stream stored since (normally one message).
          let read = 0;
          for await (const r of readOn()) {
            read++;
            next = r.seq + 1;
            if (r.msgId) heard.delete(r.msgId);
            yield { seq: r.seq, subject: r.subject, data: r.data };
            if (done()) return;
          }
          if (read === 0) break;
          failures = 0;
        }
      } catch (err) {
        if (done()) return;
        failures++;
        toEnd = true;
        opts.onResume?.(next, err);
        // Backoff while the server is away; a reconnect or a live message ends it at once.
        await waitFor(Math.min(MAX_BACKOFF_MS, 100 * 2 ** Math.min(failures, 6)));
        continue;
      }
      if (done()) return;
      if (toEnd) continue;
      if (pending.length > 0) {
        gapReadAt = 0;
        await waitFor(retryMs);
        retryMs = Math.min(200, retryMs * 2);
        continue;
      }
      if (heard.size > 0) {
        // Heard, not stored yet (the stream stores after the core delivery), or refused: retry a while.
        const now = Date.now();
        for (const [id, at] of heard) if (now - at > HEARD_GIVE_UP_MS) heard.delete(id);
        await waitFor(retryMs);
        retryMs = Math.min(200, retryMs * 2);
        continue;
      }
      retryMs = 2;
      let timedOut = true;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          wake = undefined;
          resolve();
        }, IDLE_RECHECK_MS);
        timer.unref();
        wake = () => {
          timedOut = false;
          clearTimeout(timer);
          resolve();
        };
        if (done()) ring();
      });
      if (timedOut) toEnd = true;
    }
  }

  return (async function* () {
    try {
      yield* follow();
    } finally {
      signal?.removeEventListener("abort", stop);
      stop();
    }
  })();
}
