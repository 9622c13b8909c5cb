import { STREAMS } from "@fleet/protocol";
import type { JetStreamManager, JsMsg, StoredMsg } from "@nats-io/jetstream";

/** What a handler does with a command it was handed: the consumer's message, or a swept one. */
export type CommandMsg = Pick<JsMsg, "ack" | "ackAck" | "nak" | "working"> & {
  readonly info: { readonly deliveryCount: number };
};

/** A sweep reads at most this many commands (the consumer's pull batch). */
const SWEEP_MAX = 256;

/**
 * The commands the work-queue stream still stores on `filter`, in stream order, read from the
 * stream's leader (`STREAM.MSG.GET` with `next_by_subj`; a direct get may be answered by any replica,
 * and a replica is what a stuck consumer reads). The stream holds only commands not acknowledged
 * yet, so this is a short read.
 */
export async function readStoredCommands(jsm: JetStreamManager, filter: string): Promise<StoredMsg[]> {
  const out: StoredMsg[] = [];
  let seq = 0;
  while (out.length < SWEEP_MAX) {
    // `next_by_subj` is part of nats-server 2.9's MSG.GET request; nats.js types only the direct get's.
    const msg = await jsm.streams.getMessage(STREAMS.commands.name, { seq, next_by_subj: filter } as never);
    if (!msg) break;
    out.push(msg);
    seq = msg.seq + 1;
  }
  return out;
}

/**
 * The handle of a command read by a sweep. Acknowledging deletes it from the stream, as an ack does
 * in a work-queue stream; a negative acknowledgement leaves it stored for the next sweep (or the
 * consumer made again); no ack wait runs, so `working` has nothing to extend. `settled` is called
 * once, when the handler has acknowledged it either way.
 */
export function sweptCommandMsg(jsm: JetStreamManager, seq: number, settled: () => void): CommandMsg {
  const remove = () => jsm.streams.deleteMessage(STREAMS.commands.name, seq, false).finally(settled);
  return {
    info: { deliveryCount: 1 },
    ack: () => void remove().catch(() => undefined),
    ackAck: () => remove().catch(() => false),
    nak: () => settled(),
    working: () => undefined,
  };
}
