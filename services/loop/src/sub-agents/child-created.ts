// Whether a child session exists yet: its `session_created` in its log, read from the log's start by
// direct gets (it is among the first events, so a long log is not read). The parent's owner sends the
// child's `prompt` only after it: a `prompt` decided before a cut `create_session` was completed
// (a crash between its outcome and its `session_created`, then the prompt ahead of the create's
// redelivery) would create the child without its parent link or budget.
import type { JetStreamManager } from "@nats-io/jetstream";
import { type ChildLogTopology, scanChildLog } from "./child-log.js";

export type ChildCreation = { kind: "created" } | { kind: "absent" } | { kind: "rejected"; reason: string };

/** Reads the child's log until `session_created` or the rejection of `createId` (at most `maxEvents`). */
export async function childCreation(
  jsm: JetStreamManager,
  topology: ChildLogTopology,
  childId: string,
  createId: string,
  maxEvents = 64,
): Promise<ChildCreation> {
  const found = await scanChildLog<ChildCreation>(jsm, topology, childId, maxEvents, (event) => {
    if (event.type === "session_created") return { kind: "created" };
    if (event.type === "command_rejected" && event.commandId === createId)
      return { kind: "rejected", reason: `${event.code}: ${event.reason}` };
    return undefined;
  });
  return found ?? { kind: "absent" };
}

/** Whether the child's log holds an outcome of `commandId` among its first `maxEvents` events. */
export async function childAnswered(
  jsm: JetStreamManager,
  topology: ChildLogTopology,
  childId: string,
  commandId: string,
  maxEvents = 64,
): Promise<boolean> {
  const found = await scanChildLog(jsm, topology, childId, maxEvents, (event) =>
    (event.type === "command_accepted" || event.type === "command_rejected") && event.commandId === commandId
      ? true
      : undefined,
  );
  return found === true;
}
