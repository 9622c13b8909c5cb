// Whether a fire's run is still open: its command still waits in FLEET_COMMANDS (not yet decided),
// or its session has an entry in the open-work index (a run, or an accepted command whose run has
// not begun). Checked in that order: the loop writes the entry before it acks the command.
import { type OpenFire, partitionOf, STREAMS, subjects } from "@fleet/protocol";
import { commandCopyState } from "@fleet/runtime";
import type { JetStreamManager } from "@nats-io/jetstream";

export async function isFireOpen(jsm: JetStreamManager, partitions: number, fire: OpenFire): Promise<boolean> {
  const subject = subjects.command(partitionOf(fire.sessionId, partitions), fire.sessionId);
  const queued = await commandCopyState(jsm, { seq: fire.commandSeq, subject });
  if (queued === "stored") return true;
  if (queued === "unknown") throw new Error(`${STREAMS.commands.name} could not be read`);
  const entry = await jsm.direct.getMessage(STREAMS.openWork.name, {
    last_by_subj: subjects.openWork(partitionOf(fire.sessionId, partitions), fire.sessionId),
  });
  return entry !== null;
}
