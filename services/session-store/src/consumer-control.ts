import { STREAMS, storeEventConsumer } from "@fleet/protocol";
import type { JetStreamManager } from "@nats-io/jetstream";

const STREAM = STREAMS.events.name;

/** `store-p<p>` delivering from `startSeq` (1 = the protocol's plain `deliver_policy: all` config). */
export function storeConsumerConfig(
  partition: number,
  startSeq: number,
): Record<string, unknown> & { durable_name: string } {
  const base = storeEventConsumer(partition);
  return startSeq <= 1 ? base : { ...base, deliver_policy: "by_start_sequence", opt_start_seq: startSeq };
}

export type ConsumerPreparation = "reset" | "created" | "takeover" | "kept";

/**
 * Makes `store-p<p>` ready for a new holder of partition `p`.
 * - `reset` (the active namespace has not been fed by this partition's consumer yet): recreate it to
 *   deliver from the namespace's `startSeq`.
 * - missing: create it from `startSeq`.
 * - messages still pending acknowledgement (a holder died or was deposed): recreate it from the ack
 *   floor + 1 so they are redelivered now rather than after `ack_wait`. Every redelivered event at or
 *   below a session's lastSeq is a no-op, so moving the start back never loses or doubles anything.
 */
export async function prepareStoreConsumer(
  jsm: JetStreamManager,
  partition: number,
  opts: { startSeq: number; reset: boolean },
): Promise<ConsumerPreparation> {
  const name = storeEventConsumer(partition).durable_name;
  const info = await jsm.consumers.info(STREAM, name).catch(() => null);
  if (!opts.reset && info && info.num_ack_pending === 0) return "kept";
  const startSeq = opts.reset || !info ? opts.startSeq : Math.max(opts.startSeq, info.ack_floor.stream_seq + 1);
  if (info) await jsm.consumers.delete(STREAM, name).catch(() => false);
  await jsm.consumers.add(STREAM, storeConsumerConfig(partition, startSeq));
  return opts.reset ? "reset" : info ? "takeover" : "created";
}
