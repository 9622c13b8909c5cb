// What the command stream holds for commands that got no outcome: written beside the artifacts so a
// lost command can be told from a stuck one (still stored, unacked) or one acked without an outcome.
import { loopCommandConsumer, partitionOf, STREAMS, subjects } from "@fleet/protocol";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";

export interface LostCommand {
  sessionId: string;
  commandId: string;
}

export async function diagnoseCommands(nc: NatsConnection, partitions: number, lost: readonly LostCommand[]) {
  const jsm = await jetstreamManager(nc);
  const attempt = async <T>(f: () => Promise<T>) => f().catch((err: unknown) => ({ error: String(err) }));
  const stream = await attempt(async () => (await jsm.streams.info(STREAMS.commands.name)).state);
  // Every command the work-queue stream still holds (acknowledged ones are removed).
  const remaining = await attempt(async () => {
    const { first_seq, last_seq } = (await jsm.streams.info(STREAMS.commands.name)).state;
    const out: { seq: number; subject: string; msgId: string | undefined }[] = [];
    for (let seq = first_seq; seq <= Math.min(last_seq, first_seq + 2_000); seq++) {
      const m = await jsm.streams.getMessage(STREAMS.commands.name, { seq }).catch(() => null);
      if (m) out.push({ seq, subject: m.subject, msgId: m.header?.get("Nats-Msg-Id") });
    }
    return out;
  });
  const commands = await Promise.all(
    lost.map(async ({ sessionId, commandId }) => {
      const p = partitionOf(sessionId, partitions);
      const subject = subjects.command(p, sessionId);
      const stored = await attempt(async () => {
        const m = await jsm.streams.getMessage(STREAMS.commands.name, { last_by_subj: subject });
        return m ? { seq: m.seq, msgId: m.header?.get("Nats-Msg-Id"), time: m.time } : null;
      });
      const consumer = await attempt(async () => {
        const info = await jsm.consumers.info(STREAMS.commands.name, loopCommandConsumer(p).durable_name);
        const { delivered, ack_floor, num_ack_pending, num_pending, num_redelivered, num_waiting, cluster } = info;
        return { delivered, ack_floor, num_ack_pending, num_pending, num_redelivered, num_waiting, cluster };
      });
      return { sessionId, commandId, partition: p, subject, lastStoredOnSubject: stored, consumer };
    }),
  );
  return { stream, remaining, commands };
}
