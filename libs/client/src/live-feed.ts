// The live path: one core NATS subscription per event subject per connection, shared by every tail.
import type { NatsConnection, Subscription } from "@nats-io/transport-node";

/**
 * What a tail hears from the live path: `live` when a message was published on the subject (its
 * `Nats-Msg-Id`, `""` when it has none), `reconnect` when the connection came back (messages
 * published meanwhile were not heard), `closed` when the connection closed.
 */
export type FeedSignal = { kind: "live"; msgId: string } | { kind: "reconnect" } | { kind: "closed" };
export type FeedListener = (signal: FeedSignal) => void;

interface Feed {
  sub: Subscription;
  listeners: Set<FeedListener>;
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
 * Registers `listener` for `subject`, subscribing on `nc` when it is the subject's first listener.
 * Contract: the SUB is sent before this returns, so the server holds it before any request `nc`
 * sends afterwards (one connection's protocol is processed in order). A core message is a signal,
 * never data: it may arrive before the stream stored it, or belong to an append the stream refused
 * (a fenced or duplicate publish), so the tail reads the stream itself. Returns the function that
 * unregisters the listener (the last one unsubscribes). Idempotent.
 */
export function joinFeed(nc: NatsConnection, subject: string, listener: FeedListener): () => void {
  const conn = connectionFeeds(nc);
  let feed = conn.feeds.get(subject);
  if (!feed) {
    const listeners = new Set<FeedListener>();
    const sub = nc.subscribe(subject, {
      callback: (err, msg) => {
        if (err) return;
        const signal: FeedSignal = { kind: "live", msgId: msg.headers?.get("Nats-Msg-Id") ?? "" };
        for (const l of listeners) l(signal);
      },
    });
    feed = { sub, listeners };
    conn.feeds.set(subject, feed);
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
    if (joined.listeners.size > 0 || conn.feeds.get(subject) !== joined) return;
    conn.feeds.delete(subject);
    if (!nc.isClosed()) joined.sub.unsubscribe();
  };
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
