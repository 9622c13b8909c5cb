import {
  type Encoded,
  encodeBuiltEvent,
  eventStreamOfPartition,
  FleetEvent,
  subjects,
  validate,
} from "@fleet/protocol";
import { type PublishFailure, type StreamPublisher, WRONG_LAST_SEQUENCE } from "@fleet/runtime";

export type AppendOutcome =
  | { ok: true; seq: number; event: FleetEvent }
  | { ok: false; kind: "fenced"; error: string }
  | { ok: false; kind: "invalid"; error: string }
  | { ok: false; kind: "failed"; error: string };

/**
 * The single-writer append path of one session subject. Appends are serialised: each carries
 * `msgID = meta.id` (a retried publish is deduplicated) and `expect.lastSubjectSequence = lastSeq`
 * (a deposed owner is rejected with 10071 and becomes `fenced`; every later append fails fast).
 * An append refused for a passing cause (a full store, an election, a timeout: see
 * `isTransientPublishFailure`) is retried with backoff for as long as the write gate stays open, so
 * a full store pauses the session's writes instead of failing them; the gate closing ends it
 * `fenced`. Without a gate it is retried for `retryForMs`, then `failed`.
 */
export interface SessionAppender {
  readonly sessionId: string;
  readonly lastSeq: number;
  readonly fenced: boolean;
  /**
   * Appends `event` as it is (the writer stamped its `meta`). `msgId` replaces `meta.id` as its
   * `Nats-Msg-Id` (a restored event: the stream may still remember its original id).
   */
  append(event: FleetEvent, msgId?: string): Promise<AppendOutcome>;
}

export function createSessionAppender(opts: {
  publisher: StreamPublisher;
  sessionId: string;
  partition: number;
  /** K, to name the partition's event stream (default 1: `FLEET_EVENTS`). */
  groups?: number;
  lastSeq: number;
  now: () => number;
  /** Check each event against the `FleetEvent` schema (`kind: "invalid"` when it fails); default true. */
  validate?: boolean;
  /**
   * The owner's lease fence (LeaseManager.writable): consulted before every append; false makes the
   * append, and every later one, `fenced`. Absent: only the expected sequence fences.
   */
  writeGate?: () => boolean | Promise<boolean>;
  /** Without a `writeGate`: how long passing refusals are retried (default 30 s). */
  retryForMs?: number;
  onAppended?: (event: FleetEvent, seq: number, latencyMs: number) => void;
  /** Called for each attempt refused for a passing cause; the append is retried while the gate is open. */
  onRefused?: (event: FleetEvent, failure: PublishFailure) => void;
}): SessionAppender {
  const subject = subjects.event(opts.partition, opts.sessionId);
  const stream = eventStreamOfPartition(opts.partition, opts.groups ?? 1);
  let lastSeq = opts.lastSeq;
  let fenced = false;
  /** The last append started, settled or not; `undefined` once every append settled. */
  let chain: Promise<unknown> | undefined;
  let inFlight = 0;
  // Checked or not, the bytes written are the event as built: the check only refuses.
  const encode = (event: FleetEvent): Encoded => {
    if (opts.validate === false) return encodeBuiltEvent(event);
    const checked = validate(FleetEvent, event);
    return checked.ok ? encodeBuiltEvent(event) : checked;
  };

  /** `true` without a promise when the gate answers at once (the lease is held and fresh). */
  const gateOpen = (): boolean | Promise<boolean> => opts.writeGate?.() ?? true;
  const leaseLost = (): AppendOutcome => {
    fenced = true;
    return { ok: false, kind: "fenced", error: "the partition lease is no longer held" };
  };

  const done = () => {
    if (--inFlight === 0) chain = undefined;
  };

  /** The append being published: appends are serialised, so one is enough (read by `keepTrying`). */
  const attempt = { event: undefined as FleetEvent | undefined, retryUntil: 0, gateClosed: false };
  const keepTrying = async (failure: PublishFailure): Promise<boolean> => {
    if (attempt.event) opts.onRefused?.(attempt.event, failure);
    if (!opts.writeGate) return opts.now() < attempt.retryUntil;
    attempt.gateClosed = !(await gateOpen());
    return !attempt.gateClosed;
  };

  async function publishOnce(event: FleetEvent, msgId: string): Promise<AppendOutcome> {
    if (fenced) return { ok: false, kind: "fenced", error: "session writer was fenced" };
    const gate = gateOpen();
    if (!(gate === true || (await gate))) return leaseLost();
    const encoded = encode(event);
    if (!encoded.ok) return { ok: false, kind: "invalid", error: encoded.error };
    const started = opts.now();
    attempt.event = event;
    attempt.retryUntil = started + (opts.retryForMs ?? 30_000);
    attempt.gateClosed = false;
    // Retried through a full store, elections and restarts with the same msgID and expected sequence
    // (see publishDurably), for as long as this writer may write.
    const ack = await opts.publisher.publishDurably(subject, encoded.bytes, {
      stream,
      msgID: msgId,
      expectLastSubjectSequence: lastSeq,
      timeoutMs: 5_000,
      keepTrying,
    });
    attempt.event = undefined;
    if (ack.ok) {
      lastSeq = ack.seq;
      opts.onAppended?.(event, ack.seq, opts.now() - started);
      return { ok: true, seq: ack.seq, event };
    }
    if (attempt.gateClosed) return leaseLost();
    if (ack.code === WRONG_LAST_SEQUENCE) {
      fenced = true;
      return { ok: false, kind: "fenced", error: ack.error };
    }
    return { ok: false, kind: "failed", error: ack.error };
  }

  return {
    sessionId: opts.sessionId,
    get lastSeq() {
      return lastSeq;
    },
    get fenced() {
      return fenced;
    },
    append(event, msgId = event.meta.id) {
      // Serialised: an append starts once the one before it settled (at once when none is in flight).
      const next = chain ? chain.then(() => publishOnce(event, msgId)) : publishOnce(event, msgId);
      inFlight++;
      const settled = next.then(done, done);
      chain = settled;
      return next;
    },
  };
}
