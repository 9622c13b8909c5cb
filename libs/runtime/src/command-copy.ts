// Whether a command's stored copy still waits in FLEET_COMMANDS (a work-queue stream: a copy leaves
// it once handled, or when a nats-server 2.9 cluster loses it). One check for every sender that
// stores a command again when its copy is gone (the SDK, a parent's child commands) and for the
// scheduler's probe of a fire. Read from the stream's leader (`STREAM.MSG.GET`): a direct get may
// answer from a replica that never held the copy.
import { STREAMS } from "@fleet/protocol";
import type { JetStreamManager } from "@nats-io/jetstream";

/** A stored copy: its stream sequence, its subject, and the msgID it was stored under (if checked). */
export interface CommandCopy {
  seq: number;
  subject: string;
  msgId?: string;
}

/**
 * `stored` while the leader holds this copy at its sequence; `gone` when it holds nothing there, or
 * another message (replicas of a 2.9 cluster were seen holding other commands at a sequence);
 * `unknown` when the stream could not be read.
 */
export async function commandCopyState(
  jsm: JetStreamManager,
  copy: CommandCopy,
): Promise<"stored" | "gone" | "unknown"> {
  // nats.js answers a sequence the stream does not hold with null, and throws for anything else.
  const found = await jsm.streams.getMessage(STREAMS.commands.name, { seq: copy.seq }).catch(() => undefined);
  if (found === undefined) return "unknown";
  if (found === null || found.subject !== copy.subject) return "gone";
  if (copy.msgId !== undefined && found.header?.get("Nats-Msg-Id") !== copy.msgId) return "gone";
  return "stored";
}
