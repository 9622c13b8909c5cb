// A closed fire's outcome in its session's log: the `command_accepted` or `command_rejected` of its
// command, looked for after the sequence the session had before the fire (direct gets, bounded).
import { decodeEvent, eventStreamOfPartition, partitionOf, subjects } from "@fleet/protocol";
import type { JetStreamManager } from "@nats-io/jetstream";

/** Events read at most per lookup: a command's outcome follows its publish closely. */
const MAX_EVENTS = 2_000;

export type FireOutcome = { accepted: true } | { accepted: false; code: string; reason: string };

export async function findFireOutcome(
  jsm: JetStreamManager,
  topology: { partitions: number; groups: number },
  fire: { sessionId: string; commandId: string; afterSeq: number | undefined },
): Promise<FireOutcome | undefined> {
  const partition = partitionOf(fire.sessionId, topology.partitions);
  const subject = subjects.event(partition, fire.sessionId);
  const stream = eventStreamOfPartition(partition, topology.groups);
  let seq = (fire.afterSeq ?? 0) + 1;
  for (let i = 0; i < MAX_EVENTS; i++) {
    const msg = await jsm.direct.getMessage(stream, { seq, next_by_subj: subject });
    if (!msg) return undefined;
    seq = msg.seq + 1;
    const event = decodeEvent(msg.data);
    if (!event.ok) continue;
    const e = event.value;
    if (e.type === "command_accepted" && e.commandId === fire.commandId) return { accepted: true };
    if (e.type === "command_rejected" && e.commandId === fire.commandId)
      return { accepted: false, code: e.code, reason: e.reason };
  }
  return undefined;
}
