// The session decider's lifecycle commands: `delete_session`, `archive_session`, `restore_session`.
// Pure: what the archive and the lifecycle records hold comes in through the context.
import type { ArchiveRef, CommandOf, DaySpend, SessionActivity, SessionState } from "@fleet/protocol";
import type { DraftEvent } from "../session-core/drafts.js";
import { accepted, busy, DECIDER_TEXT, type OutcomeContext, rejected } from "./command-outcomes.js";
import type { Decision } from "./decision.js";

type LifecycleCommand = CommandOf<"delete_session" | "archive_session" | "restore_session">;

/** Requester recorded when a command names none. */
export const UNSPECIFIED_REQUESTER = "unspecified";

const NOTHING: Decision = { kind: "decided", events: [], effects: [] };

/**
 * - `delete_session` / `archive_session`: refused `busy` while a run or compaction is open (abort
 *   it first); accepted with the `session_deleting` tombstone, which carries the session's spend per
 *   day and, for an archive, where it is written. On a session without a log, a command whose
 *   deletion already finished (the last lifecycle record names it) decides nothing; any other is
 *   `not_found`.
 * - `restore_session`: refused `conflict` when the session exists, `not_found` without an archive;
 *   accepted with `session_restoring` (the archived events follow, then `session_restored`).
 * A session already being deleted never gets here (`decideCommand` refuses every command then).
 */
export function decideLifecycle(
  state: SessionState,
  sessionId: string,
  cmd: LifecycleCommand,
  activity: SessionActivity,
  ctx: OutcomeContext,
): Decision {
  if (cmd.type === "restore_session") {
    if (activity !== "none") return rejected(ctx, cmd.id, cmd.type, "conflict", DECIDER_TEXT.exists(sessionId));
    if (ctx.archive === undefined) return { kind: "needs_archive", sessionId };
    if (ctx.archive === null) return rejected(ctx, cmd.id, cmd.type, "not_found", DECIDER_TEXT.noArchive(sessionId));
    return accepted(ctx, cmd, [restoringDraft(cmd, ctx.archive.ref, ctx)], [{ type: "restore_session" }]);
  }
  if (activity === "none") {
    if (ctx.lastLifecycle === undefined) return { kind: "needs_lifecycle_record", sessionId };
    if (ctx.lastLifecycle?.commandId === cmd.id) return NOTHING;
    return rejected(ctx, cmd.id, cmd.type, "not_found", DECIDER_TEXT.notFound(sessionId));
  }
  const occupied = busy(ctx, cmd, activity, DECIDER_TEXT.deleteBusy);
  if (occupied) return occupied;
  if (cmd.type === "archive_session" && !ctx.archiveRef) {
    return rejected(ctx, cmd.id, cmd.type, "unsupported", "This loop worker has no archive configured");
  }
  return accepted(ctx, cmd, [tombstoneDraft(state, sessionId, cmd, ctx)], [{ type: "delete_session" }]);
}

/**
 * A lifecycle command whose outcome is in the log (a redelivery): a deletion goes on (its tombstone
 * first, when a crash came between it and the outcome); a restore goes on from where the log is.
 */
export function decideLifecycleRedelivered(
  state: SessionState,
  cmd: LifecycleCommand,
  ctx: Pick<OutcomeContext, "newId" | "archiveRef">,
): Decision {
  if (cmd.type === "restore_session") {
    const archive = ctx.archiveRef?.(cmd.sessionId);
    if (!archive) return NOTHING;
    const started = (state.commands.get(cmd.id)?.events ?? 0) > 0;
    const events = started ? [] : [{ ...restoringDraft(cmd, archive, ctx), commandId: cmd.id }];
    return { kind: "decided", events, effects: [{ type: "restore_session" }] };
  }
  const deletion = state.deleting;
  if (deletion?.commandId !== cmd.id) return NOTHING;
  const events = deletion.event ? [] : [{ ...tombstoneDraft(state, cmd.sessionId, cmd, ctx), commandId: cmd.id }];
  return { kind: "decided", events, effects: [{ type: "delete_session" }] };
}

function restoringDraft(
  cmd: CommandOf<"restore_session">,
  archive: ArchiveRef,
  ctx: Pick<OutcomeContext, "newId">,
): DraftEvent {
  return { id: ctx.newId(), body: { type: "session_restoring", by: cmd.by ?? UNSPECIFIED_REQUESTER, archive } };
}

/** The `session_deleting` tombstone of a deletion command, from the session's fold. */
export function tombstoneDraft(
  state: SessionState,
  sessionId: string,
  cmd: CommandOf<"delete_session" | "archive_session">,
  ctx: Pick<OutcomeContext, "newId" | "archiveRef">,
): DraftEvent {
  const op = cmd.type === "archive_session" ? "archive" : "delete";
  const archive = op === "archive" ? ctx.archiveRef?.(sessionId) : undefined;
  return {
    id: ctx.newId(),
    body: {
      type: "session_deleting",
      op,
      by: cmd.by ?? UNSPECIFIED_REQUESTER,
      events: state.events,
      spend: daySpends(state),
      ...(archive ? { archive } : {}),
    },
  };
}

/** The session's spend per UTC day, oldest day first. */
export function daySpends(state: SessionState): DaySpend[] {
  return [...state.spend.days]
    .map(([day, spend]) => ({ day, ...spend }))
    .sort((a, b) => (a.day < b.day ? -1 : a.day > b.day ? 1 : 0));
}
