// Whether a fire's run is still open: its command still waits in FLEET_COMMANDS (not yet decided),
// or its session has an entry in the open-work index (a run, or an accepted command whose run has
// not begun). Checked in that order: the loop writes the entry before it acks the command.
import { type OpenFire, partitionOf, STREAMS, subjects } from "@fleet/protocol";
import type { JetStreamManager } from "@nats-io/jetstream";

const notFound = (err: unknown) => /no message found|not found/i.test((err as Error | undefined)?.message ?? "");

export async function isFireOpen(jsm: JetStreamManager, partitions: number, fire: OpenFire): Promise<boolean> {
  try {
    const queued = await jsm.streams.getMessage(STREAMS.commands.name, { seq: fire.commandSeq });
    if (queued && queued.subject === subjects.command(partitionOf(fire.sessionId, partitions), fire.sessionId))
      return true;
  } catch (err) {
    if (!notFound(err)) throw err;
  }
  const entry = await jsm.direct.getMessage(STREAMS.openWork.name, {
    last_by_subj: subjects.openWork(partitionOf(fire.sessionId, partitions), fire.sessionId),
  });
  return entry !== null;
}
