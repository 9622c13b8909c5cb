// A child's command stored in FLEET_COMMANDS can still be lost: a 3-node nats-server 2.9 cluster was
// seen losing stored commands after node kills (and its replicas holding other commands at the same
// sequences). The parent's owner stores such a command again, as the SDK does a lost command of its
// own: under a msgID derived from the copy (`<id>#<seq>`), so the copy is not deduplicated to the
// lost one, and the child's owner answers it as a duplicate if the first was handled after all (the
// fold keeps every command id).
import { type FleetCommandType, resentCommandMsgId, STREAMS } from "@fleet/protocol";
import { commandCopyState, type StreamPublisher } from "@fleet/runtime";
import type { JetStreamManager } from "@nats-io/jetstream";

/** A command as stored in FLEET_COMMANDS. */
export interface StoredCommand {
  commandId: string;
  commandType: FleetCommandType;
  subject: string;
  data: Uint8Array;
  seq: number;
}

/** How long a stored command waits before its loss is looked for, and how often it is looked for. */
const COPY_CHECK_MS = 10_000;
/** How many looks `confirmStored` takes at most (5 minutes at the default). */
const CHECKS = 30;

/** Stores the command again under `<id>#<seq>`; false when it could not be stored. */
async function storeAgain(publisher: StreamPublisher, stored: StoredCommand): Promise<boolean> {
  const ack = await publisher
    .publishDurably(stored.subject, stored.data, {
      msgID: resentCommandMsgId(stored.commandId, stored.seq),
      stream: STREAMS.commands.name,
    })
    .catch(() => undefined);
  return ack?.ok === true;
}

/**
 * Keeps a child's stored command from being lost once nothing else would send it again (a create
 * or prompt while the parent's call runs; a close after it has ended). While
 * its copy waits in the stream for the child's owner (or the owner's sweep) nothing is done. Once the
 * copy is gone it was handled or lost: `handled` asks the child's log (undefined: it could not be
 * read); without it the two cannot be told apart and the command is stored again anyway (a handled
 * one is then answered as a duplicate). Stored again at most once. Stops at `signal`, or after
 * `checks` looks; never rejects.
 */
export async function confirmStored(opts: {
  jsm: JetStreamManager;
  publisher: StreamPublisher;
  stored: StoredCommand;
  handled?: () => Promise<boolean | undefined>;
  signal?: AbortSignal;
  checkMs?: number;
  checks?: number;
}): Promise<"stored_again" | "handled" | "gave_up"> {
  for (let look = 0; look < (opts.checks ?? CHECKS); look++) {
    await new Promise((resolve) => setTimeout(resolve, opts.checkMs ?? COPY_CHECK_MS).unref());
    if (opts.signal?.aborted) break;
    const { seq, subject, commandId } = opts.stored;
    if ((await commandCopyState(opts.jsm, { seq, subject, msgId: commandId })) !== "gone") continue;
    const handled = opts.handled ? await opts.handled().catch(() => undefined) : false;
    if (handled === true) return "handled";
    if (handled === undefined || opts.signal?.aborted) continue;
    if (await storeAgain(opts.publisher, opts.stored)) return "stored_again";
  }
  return "gave_up";
}
