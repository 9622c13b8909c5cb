import { eventStreamName, eventStreamOfSubject } from "@fleet/protocol";
import { readSubject } from "@fleet/runtime";
import { DeliverPolicy, type JetStreamClient, type JetStreamManager, type JsMsg } from "@nats-io/jetstream";
import { toEventRecord } from "./delivered-message.js";
import type { EventRecord, GapReader, Projector } from "./projector.js";

/** Reads missing events of one session subject straight from its group's stream (ordered consumer). */
export function streamGapReader(js: JetStreamClient, jsm: JetStreamManager, groups: number): GapReader {
  return async (subject, fromSeq, toSeq) => {
    const out: EventRecord[] = [];
    const stream = eventStreamOfSubject(subject, groups);
    for await (const r of readSubject(js, jsm, stream, subject, { fromSeq, toSeq })) {
      out.push({ seq: r.seq, subject: r.subject, data: r.data, prevSeq: undefined });
    }
    return out;
  };
}

/** A stream's last sequence (0 when empty). */
export async function streamLastSeq(jsm: JetStreamManager, stream: string): Promise<number> {
  return (await jsm.streams.info(stream)).state.last_seq;
}

/** Every group's last sequence, in group order. */
export async function groupLastSeqs(jsm: JetStreamManager, groups: number): Promise<number[]> {
  return Promise.all(Array.from({ length: groups }, (_, g) => streamLastSeq(jsm, eventStreamName(g, groups))));
}

export interface ReplayOptions {
  js: JetStreamClient;
  /** The stream replayed: one group's. */
  stream: string;
  projector: Projector;
  ns: string;
  fromSeq: number;
  toSeq: number;
  maxBatch?: number;
  onBatch?: (lastSeq: number, size: number) => void;
}

/**
 * Applies every event of `stream` with `fromSeq <= seq <= toSeq` to namespace `ns`, in stream order,
 * with an unfiltered ordered consumer. Batches end at `maxBatch` events or when the consumer has
 * nothing more pending, and the next message is pulled only after a batch is written (backpressure).
 * Returns the last sequence applied (`fromSeq - 1` when there was nothing).
 */
export async function replayStream(opts: ReplayOptions): Promise<number> {
  if (opts.toSeq < opts.fromSeq) return opts.fromSeq - 1;
  const maxBatch = opts.maxBatch ?? 50_000;
  const consumer = await opts.js.consumers.get(opts.stream, {
    deliver_policy: DeliverPolicy.StartSequence,
    opt_start_seq: opts.fromSeq,
  });
  const messages = await consumer.consume({ max_messages: Math.min(maxBatch, 10_000) });
  let last = opts.fromSeq - 1;
  let batch: JsMsg[] = [];
  const flush = async () => {
    if (batch.length === 0) return;
    const records = batch.map(toEventRecord);
    batch = [];
    await opts.projector.applyBatch(opts.ns, records);
    last = (records.at(-1) as EventRecord).seq;
    opts.onBatch?.(last, records.length);
  };
  try {
    for await (const m of messages) {
      if (m.seq > opts.toSeq) break;
      batch.push(m);
      if (m.seq >= opts.toSeq) break;
      if (batch.length >= maxBatch || m.info.pending === 0) await flush();
    }
    await flush();
  } finally {
    await messages.close().catch(() => undefined);
  }
  return last;
}
