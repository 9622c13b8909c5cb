// Publishing one command and reading its outcome from the session's log.
import {
  decodeEvent,
  eventStreamOfPartition,
  type FleetCommand,
  partitionOf,
  resentCommandMsgId,
  STREAMS,
  subjects,
} from "@fleet/protocol";
import { commandCopyState, isStorageFullError } from "@fleet/runtime";
import { type ClientContext, lastEventSeq } from "./client-context.js";
import { commandBytes } from "./command-bytes.js";
import type { OutcomeRecord } from "./command-options.js";
import { CommandRejectedError, FleetError, storageFullError } from "./errors.js";
import { tailSubject } from "./event-tail.js";
import { describeError } from "./nats-failures.js";

/**
 * Publishes `command` to `fleet.cmd.<p>.<sessionId>` (`Nats-Msg-Id` = its id) and resolves with its
 * outcome event, `command_accepted` or `command_rejected`. The outcome is read from the event subject
 * starting right after the last event that existed before the publish, so it cannot be missed.
 * Errors: `invalid_input` before publishing, `unavailable` (`storage_full`, `publish_failed`,
 * `closed`), `timeout` when no outcome arrived within `timeoutMs` or `signal` aborted. `timeoutMs`
 * 0 waits for no outcome: `timeout` as soon as the command is stored (a fast loop's outcome would
 * otherwise race the timer).
 */
export async function submitCommand(
  ctx: ClientContext,
  command: FleetCommand,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<OutcomeRecord> {
  // Large parts, or the whole command, go to `fleet_inputs` first (PROTOCOL "Large inputs").
  const encoded = await commandBytes(command, ctx.blobs);
  const partition = partitionOf(command.sessionId, ctx.partitions);
  const eventSubject = subjects.event(partition, command.sessionId);
  const commandSubject = subjects.command(partition, command.sessionId);
  // The outcome comes after every event that exists now: start reading right after them.
  const logEnd = await lastEventSeq(ctx, command.sessionId);
  let fromSeq = logEnd + 1;
  // A re-sent command id is deduplicated to its first copy (the ack names its sequence). A copy
  // that the work-queue stream no longer holds was either handled, and its outcome is in the log,
  // or lost (a nats-server 2.9 cluster was seen losing stored commands after node kills). Once the
  // log up to `logEnd` shows no outcome, a lost copy is published again under a msgID derived from
  // it, so concurrent re-senders add one copy; the loop answers a command id it has decided as a
  // duplicate.
  let firstCopy: number | undefined;
  const republishIfLost = async () => {
    const seq = firstCopy;
    firstCopy = undefined;
    if (seq === undefined) return;
    const copy = await commandCopyState(ctx.jsm, { seq, subject: commandSubject, msgId: command.id });
    if (copy !== "gone") return;
    await ctx.js.publish(commandSubject, encoded.bytes, { msgID: resentCommandMsgId(command.id, seq) });
  };
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  signal?.addEventListener("abort", () => abort.abort(), { once: true });
  // Listening starts before the publish: the outcome is appended after it, so it cannot be missed.
  const tail = tailSubject(ctx, eventStreamOfPartition(partition, ctx.groups), eventSubject, {
    fromSeq: () => fromSeq,
    signal: abort.signal,
  });
  try {
    try {
      const ack = await ctx.js.publish(commandSubject, encoded.bytes, { msgID: command.id });
      if (ack.duplicate) {
        fromSeq = 1;
        firstCopy = ack.seq;
        if (logEnd === 0) await republishIfLost().catch(() => undefined);
      }
    } catch (err) {
      if (isStorageFullError(err)) throw storageFullError(`send ${command.type} ${command.id}`, err);
      throw new FleetError(
        "unavailable",
        "publish_failed",
        `cannot publish ${command.type} to ${STREAMS.commands.name} (${describeError(err)}); is the stack set up (fleet up)?`,
        { cause: err },
      );
    }
    const noOutcome = () =>
      new FleetError(
        "timeout",
        "timeout",
        `no outcome for ${command.type} ${command.id} on session ${command.sessionId} within ${timeoutMs} ms; is a loop worker running? (fleet doctor)`,
      );
    if (timeoutMs <= 0) throw noOutcome();
    for await (const record of tail) {
      const decoded = decodeEvent(record.data);
      if (!decoded.ok) continue;
      const event = decoded.value;
      if ((event.type === "command_accepted" || event.type === "command_rejected") && event.commandId === command.id) {
        return { seq: record.seq, event };
      }
      if (record.seq >= logEnd) await republishIfLost().catch(() => undefined);
    }
    if (ctx.nc.isClosed()) throw new FleetError("unavailable", "closed", "the NATS connection was closed");
    throw noOutcome();
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}

/** The `CommandRejectedError` of a `command_rejected` outcome, or null for an acceptance. */
export function rejectionOf(sessionId: string, outcome: OutcomeRecord): CommandRejectedError | null {
  const { seq, event } = outcome;
  if (event.type !== "command_rejected") return null;
  return new CommandRejectedError({
    code: event.code,
    reason: event.reason,
    commandId: event.commandId,
    commandType: event.commandType,
    sessionId,
    seq,
  });
}
