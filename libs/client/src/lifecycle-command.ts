// Deleting, archiving and restoring a session: the command, then its lifecycle record.
import { hostname, userInfo } from "node:os";
import { decodeEvent, type FleetCommand, type LifecycleRecord } from "@fleet/protocol";
import { type ClientContext, eventStreamOf, eventSubjectOf, streamUnavailable } from "./client-context.js";
import type { LifecycleOptions } from "./command-options.js";
import { FleetError, isFleetError } from "./errors.js";
import { newId } from "./ids.js";
import { readLifecycleRecord, watchLifecycleRecord } from "./lifecycle-wait.js";
import { rejectionOf, submitCommand } from "./submit-command.js";

export type LifecycleCommandType = "delete_session" | "archive_session" | "restore_session";

/** The session's last lifecycle record (`fleet.evt.lifecycle.<sessionId>`), or null; `unavailable` when unreadable. */
export async function lifecycleRecordOf(ctx: ClientContext, sessionId: string): Promise<LifecycleRecord | null> {
  try {
    return await readLifecycleRecord(ctx.jsm, sessionId, ctx.groups);
  } catch (err) {
    throw streamUnavailable(err);
  }
}

/**
 * Sends a lifecycle command and resolves with its lifecycle record once the operation is done (a
 * deletion once its tombstone is purged). A command id whose record is already there resolves with
 * it. Errors: `CommandRejectedError` on `command_rejected`, `timeout` when it did not finish within
 * `timeoutMs` (it goes on), and `submitCommand`'s.
 */
export async function runLifecycleCommand(
  ctx: ClientContext,
  sessionId: string,
  type: LifecycleCommandType,
  opts: LifecycleOptions,
  timeoutMs: number,
): Promise<LifecycleRecord> {
  const command = {
    type,
    id: opts.commandId ?? newId(),
    sessionId,
    ts: Date.now(),
    by: opts.by ?? defaultRequester(),
  } as FleetCommand;
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  // Listening first: a deletion purges its outcome, so its record may be all there is to see.
  const watch = watchLifecycleRecord(ctx.nc, sessionId, command.id, abort.signal);
  try {
    const earlier = await lifecycleRecordOf(ctx, sessionId);
    if (earlier?.commandId === command.id) return earlier;
    const outcome = submitCommand(ctx, command, timeoutMs, abort.signal).then(
      (o) => ({ kind: "outcome" as const, ...o }),
      (err: unknown) => ({ kind: "failed" as const, err }),
    );
    const first = await Promise.race([watch.record.then((record) => ({ kind: "record" as const, record })), outcome]);
    if (first.kind === "record" && first.record) return await settled(ctx, first.record, abort.signal);
    if (first.kind === "outcome") {
      const rejection = rejectionOf(sessionId, first);
      if (rejection) throw rejection;
    }
    if (first.kind === "failed" && !(isFleetError(first.err) && first.err.kind === "timeout")) throw first.err;
    const record = await watch.record;
    if (record) return await settled(ctx, record, abort.signal);
    throw new FleetError(
      "timeout",
      "timeout",
      `${type} ${command.id} of session ${sessionId} did not finish within ${timeoutMs} ms; it goes on (see lifecycleRecord)`,
    );
  } finally {
    clearTimeout(timer);
    abort.abort();
    watch.close();
  }
}

/**
 * A deletion's record is written just before its tombstone (the outcome and `session_deleting`)
 * is purged: resolves with the record once the session's subject no longer ends with it.
 */
async function settled(ctx: ClientContext, record: LifecycleRecord, signal: AbortSignal): Promise<LifecycleRecord> {
  if (record.type === "session_restored") return record;
  const subject = eventSubjectOf(ctx, record.sessionId);
  while (!signal.aborted) {
    const last = await ctx.jsm.direct.getMessage(eventStreamOf(ctx, record.sessionId), { last_by_subj: subject });
    const event = last ? decodeEvent(last.data) : undefined;
    const tombstone =
      event?.ok &&
      ((event.value.type === "command_accepted" && event.value.commandId === record.commandId) ||
        event.value.meta.commandId === record.commandId);
    if (!tombstone) return record;
    await new Promise((r) => setTimeout(r, 25));
  }
  return record;
}

/** `<user>@<host>` of this process, the requester of a lifecycle command by default. */
function defaultRequester(): string {
  try {
    return `${userInfo().username}@${hostname()}`.slice(0, 256);
  } catch {
    return `pid ${process.pid}@${hostname()}`.slice(0, 256);
  }
}
