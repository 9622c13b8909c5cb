// The live path: one core NATS subscription per event subject per connection, shared by every tail.
import { liveSubjectOf } from "@fleet/protocol";
import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";

/** A stored message as its stream republished it on the live path (change 67). */
export interface LiveRecord {
  /** Its stream sequence (`Nats-Sequence`). */
  seq: number;
  /** The sequence of the subject's message before it, 0 for none (`Nats-Last-Sequence`). */
  lastSeq: number;
  /** Its subject in the stream (`Nats-Subject`). */
  subject: string;
  data: Uint8Array;
  /** Its `Nats-Msg-Id`, `""` when it has none. */
  msgId: string;
}

/**
 * What a tail hears from the live path: `record` when its stream stored a message of the subject
 * (streams that republish, change 67); `live` when a message was published on the subject (its
 * `Nats-Msg-Id`, `""` when it has none or the feed lost track: read to the subject's end);
 * `reconnect` when the connection came back (messages published meanwhile were not heard);
 * `closed` when the connection closed.
 */
export type FeedSignal =
  | { kind: "record"; record: LiveRecord }
  | { kind: "live"; msgId: string }
  | { kind: "reconnect" }
  | { kind: "closed" };
export type FeedListener = (signal: FeedSignal) => void;

interface Feed {
  listeners: Set<FeedListener>;
  unsubscribe(): void;
}

interface ConnectionFeeds {
  feeds: Map<string, Feed>;
  listeners: Set<FeedListener>;
}

const byConnection = new WeakMap<NatsConnection, ConnectionFeeds>();

/** Feeds open on `nc`: how many core subscriptions the live path holds (for tests and metrics). */
export function liveFeedCount(nc: NatsConnection): number {
  return byConnection.get(nc)?.feeds.size ?? 0;
}

/**
 * Registers `listener` for `subject` (a subject of an event stream), subscribing on `nc` when it is
 * the subject's first listener: with `republished` (its stream republishes, change 67) on the
 * subject's live copy `fleet.live.<…>`, whose messages are stored ones (`record`), else on `subject`
 * itself (`live` doorbells). A live subscription the server refuses (permissions made before change
 * 67) falls back to `subject`, and its listeners hear `live` with no id (read to the end).
 * Contract: the SUB is sent before this returns, so the server holds it before any request `nc`
 * sends afterwards (one connection's protocol is processed in order). A doorbell is a signal, never
 * data: it may arrive before the stream stored it, or belong to an append the stream refused (a
 * fenced or duplicate publish), so the tail reads the stream itself. Returns the function that
 * unregisters the listener (the last one unsubscribes). Idempotent.
 */
export function joinFeed(nc: NatsConnection, subject: string, listener: FeedListener, republished = false): () => void {
  const conn = connectionFeeds(nc);
  const live = republished ? liveSubjectOf(subject) : null;
  const key = live ?? subject;
  let feed = conn.feeds.get(key);
  if (!feed) {
    const listeners = new Set<FeedListener>();
    const emit = (signal: FeedSignal) => {
      for (const l of listeners) l(signal);
    };
    const doorbells = (): Subscription =>
      nc.subscribe(subject, {
        callback: (err, msg) => {
          if (!err) emit({ kind: "live", msgId: msg.headers?.get("Nats-Msg-Id") ?? "" });
        },
      });
    let sub: Subscription;
    const created: Feed = { listeners, unsubscribe: () => sub.unsubscribe() };
    sub = live
      ? nc.subscribe(live, {
          callback: (err, msg) => {
            if (err) {
              if (nc.isClosed() || conn.feeds.get(key) !== created) return;
              sub = doorbells();
              emit({ kind: "live", msgId: "" });
              return;
            }
            const record = liveRecordOf(msg);
            emit(record ? { kind: "record", record } : { kind: "live", msgId: "" });
          },
        })
      : doorbells();
    feed = created;
    conn.feeds.set(key, feed);
  }
  const joined = feed;
  joined.listeners.add(listener);
  conn.listeners.add(listener);
  let left = false;
  return () => {
    if (left) return;
    left = true;
    joined.listeners.delete(listener);
    conn.listeners.delete(listener);
    if (joined.listeners.size > 0 || conn.feeds.get(key) !== joined) return;
    conn.feeds.delete(key);
    if (!nc.isClosed()) joined.unsubscribe();
  };
}

/** A republished message's record; `null` when its headers are not those of a republish. */
function liveRecordOf(msg: Msg): LiveRecord | null {
  const h = msg.headers;
  const seq = Number(h?.get("Nats-Sequence"));
  const lastSeq = Number(h?.get("Nats-Last-Sequence") || "0");
  const subject = h?.get("Nats-Subject") ?? "";
  if (!Number.isSafeInteger(seq) || seq < 1 || !Number.isSafeInteger(lastSeq) || lastSeq < 0 || lastSeq >= seq) {
    return null;
  }
  if (!subject) return null;
  return { seq, lastSeq, subject, data: msg.data, msgId: h?.get("Nats-Msg-Id") ?? "" };
}

function connectionFeeds(nc: NatsConnection): ConnectionFeeds {
  let conn = byConnection.get(nc);
  if (conn) return conn;
  const created: ConnectionFeeds = { feeds: new Map(), listeners: new Set() };
  byConnection.set(nc, created);
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type !== "reconnect") continue;
      for (const l of created.listeners) l({ kind: "reconnect" });
    }
  })().catch(() => undefined);
  void nc.closed().then(() => {
    for (const l of created.listeners) l({ kind: "closed" });
  });
  conn = created;
  return conn;
}
