// A resumable tail of one subject of a stream: the transport under `events()` and command outcomes.
import { sleep } from "@fleet/runtime";
import { type Consumer, type ConsumerMessages, DeliverPolicy, type JetStreamClient } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";

/** One stored message of the tailed subject. */
export interface TailRecord {
  seq: number;
  subject: string;
  data: Uint8Array;
}

export interface TailOptions {
  /** First stream sequence to deliver (inclusive, at least 1). */
  fromSeq: number;
  /** Stops the tail; the iterator then returns normally. */
  signal?: AbortSignal;
  /** Called when the consumer had to be recreated (server restart, reconnect, heartbeat loss). */
  onResume?: (nextSeq: number, cause: unknown) => void;
}

const MAX_BACKOFF_MS = 5_000;
/** Pull expiry and idle heartbeat: a silent stall is detected within about two heartbeats. */
const CONSUME_OPTIONS = { max_messages: 256, expires: 10_000, idle_heartbeat: 5_000 } as const;

/**
 * Yields every message of `subject` from `fromSeq` on, forever (until `signal` aborts, the caller
 * stops iterating, or the connection is closed).
 * Contract: stream sequences are strictly increasing; no message of the subject is skipped and none
 * is delivered twice, across reconnects and server restarts. Built on an ordered consumer (one
 * filter subject, nats-server 2.9); whenever it fails or ends, a new one is created at the sequence
 * after the last one delivered, with backoff while the server is unreachable. A reconnect of the
 * connection recreates the consumer at once (the server may have lost it), without waiting for
 * missed heartbeats.
 */
export async function* tailSubject(
  nc: NatsConnection,
  js: JetStreamClient,
  stream: string,
  subject: string,
  opts: TailOptions,
): AsyncGenerator<TailRecord> {
  let next = Math.max(1, opts.fromSeq);
  let failures = 0;
  const signal = opts.signal;
  const isClosed = () => nc.isClosed();
  let messages: ConsumerMessages | undefined;
  const stop = () => void messages?.close().catch(() => undefined);
  const status = nc.status();
  void (async () => {
    for await (const s of status) if (s.type === "reconnect") stop();
  })().catch(() => undefined);
  try {
    yield* follow();
  } finally {
    (status as { stop?: () => void }).stop?.();
  }

  async function* follow(): AsyncGenerator<TailRecord> {
    while (!signal?.aborted && !isClosed()) {
      let consumer: Consumer | undefined;
      try {
        consumer = await js.consumers.get(stream, {
          filter_subjects: subject,
          deliver_policy: DeliverPolicy.StartSequence,
          opt_start_seq: next,
        });
        messages = await consumer.consume(CONSUME_OPTIONS);
        signal?.addEventListener("abort", stop, { once: true });
        // Aborted meanwhile: close, and still run the iterator, which then ends at once
        // (closing consumer messages that were never iterated does not settle).
        if (signal?.aborted) stop();
        for await (const m of messages) {
          if (signal?.aborted) break;
          failures = 0;
          if (m.seq < next) continue;
          next = m.seq + 1;
          yield { seq: m.seq, subject: m.subject, data: m.data };
        }
        if (signal?.aborted || isClosed()) return;
        opts.onResume?.(next, new Error("consumer ended"));
      } catch (err) {
        if (signal?.aborted || isClosed()) return;
        failures++;
        opts.onResume?.(next, err);
        await sleep(Math.min(MAX_BACKOFF_MS, 100 * 2 ** Math.min(failures, 6)), signal);
      } finally {
        signal?.removeEventListener("abort", stop);
        await messages?.close().catch(() => undefined);
        messages = undefined;
        // Ordered consumers are ephemeral but linger for their inactive threshold: delete it now.
        if (consumer && !isClosed()) void consumer.delete().catch(() => undefined);
      }
    }
  }
}
