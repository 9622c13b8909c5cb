import { jetstreamManager } from "@nats-io/jetstream";
import { createInbox, type Msg, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import {
  isTransientPublishFailure,
  NO_STREAM,
  PUBLISH_FAILED,
  PUBLISH_TIMEOUT,
  publishFailureCause,
  WRONG_LAST_SEQUENCE,
} from "./publish-failure.js";
import { PublishHeaders } from "./publish-headers.js";
import { sleep } from "./sleep.js";

export { NO_STREAM, PUBLISH_FAILED, PUBLISH_TIMEOUT, WRONG_LAST_SEQUENCE };

/** `code`: the JetStream API `err_code` (e.g. 10071), or NO_STREAM, PUBLISH_TIMEOUT, PUBLISH_FAILED. */
export type PublishFailure = { ok: false; code: number; error: string };
export type PublishAck = { ok: true; stream: string; seq: number; duplicate: boolean } | PublishFailure;

export interface PublishOptions {
  /** `Nats-Msg-Id`: the server drops a repeat within the stream's duplicate window (and acks it). */
  msgID?: string;
  /** `Nats-Expected-Last-Subject-Sequence`: stored only if the subject's last sequence is this (0 = empty). */
  expectLastSubjectSequence?: number;
  /** More headers, written after those two (keys as given; values without CR or LF). */
  headers?: Readonly<Record<string, string>>;
  timeoutMs?: number;
}

/**
 * JetStream publishing without a request object per message: one wildcard inbox subscription
 * receives every ack, matched by reply token; timeouts are checked by one timer. Same wire protocol
 * and headers as `js.publish`; errors are data (`ok: false`), never thrown. Acks resolve in the
 * order the server sends them.
 */
export interface DurablePublishOptions extends PublishOptions {
  /** The stream that captures `subject`: read to tell a retry's 10071 caused by our own landed attempt. */
  stream: string;
  /**
   * How long transient failures (`isTransientPublishFailure`: a full store, no responders, an
   * election, a timeout, a lost connection) are retried when `keepTrying` is not given (default 30 s).
   */
  retryForMs?: number;
  /**
   * Asked after each transient failure, with that failure: true retries it (after the backoff), false
   * ends with it. Given, it replaces the `retryForMs` deadline: a writer that holds a lease retries
   * for as long as it holds it.
   */
  keepTrying?: (failure: PublishFailure) => boolean | Promise<boolean>;
}

export interface StreamPublisher {
  publish(subject: string, data: Uint8Array, opts?: PublishOptions): Promise<PublishAck>;
  /**
   * `publish`, retried with backoff (50 ms doubling to 1 s) through transient failures (a full store,
   * a stream leader election, a NATS restart) with the same msgID and the same expected last subject sequence, so at most one copy is
   * stored. A 10071 after an attempt whose outcome is unknown (timed out, connection lost) is checked
   * against the subject's last message: when that is this msgID, the first attempt landed and the
   * result is that message's sequence (`duplicate: true`), not a fence.
   */
  publishDurably(subject: string, data: Uint8Array, opts: DurablePublishOptions): Promise<PublishAck>;
  /** Acks being waited for. */
  readonly pending: number;
  /** Fails every pending publish (PUBLISH_FAILED) and stops listening. */
  close(): void;
}

interface Waiter {
  resolve: (ack: PublishAck) => void;
  deadline: number;
}

const decoder = new TextDecoder();

export function createStreamPublisher(
  nc: NatsConnection,
  opts: { timeoutMs?: number; inboxPrefix?: string } = {},
): StreamPublisher {
  const defaultTimeout = opts.timeoutMs ?? 5_000;
  // The connection's inbox prefix by default: the one its NATS user may subscribe to (deploy/nats).
  const prefix = createInbox(opts.inboxPrefix ?? inboxPrefixOfConnection(nc));
  const waiting = new Map<string, Waiter>();
  let counter = 0;
  let sweeper: NodeJS.Timeout | undefined;
  let closed = false;
  let sub: Subscription | undefined;

  const settle = (token: string, ack: PublishAck) => {
    const w = waiting.get(token);
    if (!w) return;
    waiting.delete(token);
    w.resolve(ack);
    if (waiting.size === 0 && sweeper) {
      clearInterval(sweeper);
      sweeper = undefined;
    }
  };

  const sweep = () => {
    const now = Date.now();
    for (const [token, w] of waiting) {
      if (w.deadline <= now) settle(token, { ok: false, code: PUBLISH_TIMEOUT, error: "no acknowledgement in time" });
    }
  };

  const onAck = (msg: Msg) => {
    const token = msg.subject.slice(prefix.length + 1);
    if (msg.headers?.code === 503) {
      settle(token, { ok: false, code: NO_STREAM, error: "no stream captures the subject (no responders)" });
      return;
    }
    settle(token, parseAck(msg.data));
  };

  const failAll = (error: string) => {
    for (const token of [...waiting.keys()]) settle(token, { ok: false, code: PUBLISH_FAILED, error });
  };

  const ensureSubscribed = () => {
    if (sub) return;
    sub = nc.subscribe(`${prefix}.*`, { callback: (err, msg) => (err ? failAll(err.message) : onAck(msg)) });
    void nc.closed().then(() => failAll("connection closed"));
  };

  function publish(subject: string, data: Uint8Array, publishOpts: PublishOptions = {}): Promise<PublishAck> {
    if (closed || nc.isClosed()) {
      return Promise.resolve({ ok: false, code: PUBLISH_FAILED, error: "connection closed" });
    }
    ensureSubscribed();
    const token = (counter++).toString(36);
    return new Promise<PublishAck>((resolve) => {
      waiting.set(token, { resolve, deadline: Date.now() + (publishOpts.timeoutMs ?? defaultTimeout) });
      if (!sweeper) {
        sweeper = setInterval(sweep, 100);
        sweeper.unref();
      }
      try {
        const reply = `${prefix}.${token}`;
        const h = headersOf(publishOpts);
        nc.publish(subject, data, h ? { reply, headers: h } : { reply });
      } catch (err) {
        settle(token, { ok: false, code: PUBLISH_FAILED, error: (err as Error).message });
      }
    });
  }

  function publishDurably(subject: string, data: Uint8Array, o: DurablePublishOptions): Promise<PublishAck> {
    const started = Date.now();
    // The first attempt's ack as it is when it is a success (no further step per append).
    return publish(subject, data, o).then((ack) => (ack.ok ? ack : retryDurably(subject, data, o, started, ack)));
  }

  /** `publishDurably` after a first attempt (made at `started`) that failed with `first`. */
  async function retryDurably(
    subject: string,
    data: Uint8Array,
    o: DurablePublishOptions,
    started: number,
    first: PublishFailure,
  ): Promise<PublishAck> {
    const retryForMs = o.retryForMs ?? 30_000;
    const deadline = started + retryForMs;
    let outcomeUnknown = false;
    let delay = 50;
    for (let attempt = 0; ; attempt++) {
      const ack = attempt === 0 ? first : await publish(subject, data, o);
      if (ack.ok) return ack;
      if (ack.code === WRONG_LAST_SEQUENCE) {
        if (!outcomeUnknown || o.msgID === undefined) return ack;
        const readUntil = o.keepTrying ? Date.now() + retryForMs : deadline;
        const landed = await lastMessageOf(nc, o.stream, subject, readUntil);
        return landed?.msgId === o.msgID ? { ok: true, stream: o.stream, seq: landed.seq, duplicate: true } : ack;
      }
      if (closed || nc.isClosed() || !isTransientPublishFailure(ack.code)) return ack;
      const more = o.keepTrying ? await o.keepTrying(ack) : Date.now() + delay <= deadline;
      if (!more || closed || nc.isClosed()) return ack;
      // 503: no stream leader received it; a full store refused it. Anything else may have been stored without an ack.
      if (ack.code !== NO_STREAM && publishFailureCause(ack.code) !== "storage_full") outcomeUnknown = true;
      await sleep(delay);
      delay = Math.min(delay * 2, 1_000);
    }
  }

  return {
    publish,
    publishDurably,
    get pending() {
      return waiting.size;
    },
    close() {
      closed = true;
      failAll("publisher closed");
      sub?.unsubscribe();
      sub = undefined;
    },
  };
}

/**
 * The last stored message of `subject` (its sequence and `Nats-Msg-Id`), or null when the subject is
 * empty or it could not be read before `deadline` (retried meanwhile, e.g. during an election).
 */
async function lastMessageOf(
  nc: NatsConnection,
  stream: string,
  subject: string,
  deadline: number,
): Promise<{ seq: number; msgId: string | undefined } | null> {
  for (let delay = 50; ; delay = Math.min(delay * 2, 1_000)) {
    try {
      const jsm = await jetstreamManager(nc, { checkAPI: false, timeout: 2_000 });
      const msg = await jsm.streams.getMessage(stream, { last_by_subj: subject });
      return msg ? { seq: msg.seq, msgId: msg.header?.get("Nats-Msg-Id") || undefined } : null;
    } catch (err) {
      if (/no message found/i.test((err as Error).message)) return null;
      // No stream leader yet, or a timeout: retried below.
    }
    if (Date.now() + delay > deadline) return null;
    await sleep(delay);
  }
}

/** The publish's `Nats-Msg-Id`, expected sequence and other headers, if any (one object, written once). */
function headersOf(o: PublishOptions): PublishHeaders | undefined {
  const seq = o.expectLastSubjectSequence;
  if (o.msgID === undefined && seq === undefined && o.headers === undefined) return undefined;
  return PublishHeaders.of({
    "Nats-Msg-Id": o.msgID,
    "Nats-Expected-Last-Subject-Sequence": seq === undefined ? undefined : String(seq),
    ...o.headers,
  });
}

function parseAck(data: Uint8Array): PublishAck {
  let body: unknown;
  try {
    body = JSON.parse(decoder.decode(data));
  } catch {
    return { ok: false, code: PUBLISH_FAILED, error: "unreadable publish acknowledgement" };
  }
  const b = body as {
    stream?: unknown;
    seq?: unknown;
    duplicate?: unknown;
    error?: { err_code?: unknown; code?: unknown; description?: unknown };
  };
  if (b.error) {
    const code = typeof b.error.err_code === "number" ? b.error.err_code : Number(b.error.code) || PUBLISH_FAILED;
    return { ok: false, code, error: String(b.error.description ?? "publish rejected") };
  }
  if (typeof b.stream !== "string" || typeof b.seq !== "number" || !Number.isSafeInteger(b.seq)) {
    return { ok: false, code: PUBLISH_FAILED, error: "malformed publish acknowledgement" };
  }
  return { ok: true, stream: b.stream, seq: b.seq, duplicate: b.duplicate === true };
}

/** The `inboxPrefix` the connection was made with (nats.js keeps its options on the implementation). */
export function inboxPrefixOfConnection(nc: NatsConnection): string | undefined {
  return (nc as NatsConnection & { options?: { inboxPrefix?: string } }).options?.inboxPrefix;
}
