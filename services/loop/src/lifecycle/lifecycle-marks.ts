// Where a session's lifecycle operations stand in its log, by stream sequence (the shell's view;
// the decider's is `SessionState.deleting`).
import type { FleetEvent } from "@fleet/protocol";
import { emptyTraceMark, markTrace, type TraceMark } from "../snapshots/trace-mark.js";

export interface LifecycleMarks {
  /** The deletion accepted for the session: its outcome's and its tombstone's sequences. */
  deletion?: { commandId: string; acceptSeq: number; tombstoneSeq: number | undefined };
  /**
   * The restore that brought the log back: how many events followed its start, whether its
   * `session_restored` is logged, and how many events came after that (any means the restore is
   * over: a later command was decided only once the restore had finished).
   */
  restore?: { commandId: string; by: string; requestedAt: number; appended: number; restored: boolean; after: number };
  /** Where the open run's trace begins in the log (see `TraceMark`); absent before the first event. */
  trace?: TraceMark;
}

const DELETING = new Set(["delete_session", "archive_session"]);

/** Updates `marks` with one event appended at `seq`, in place. */
export function markLifecycle(marks: LifecycleMarks, event: FleetEvent, seq: number): void {
  marks.trace ??= emptyTraceMark();
  markTrace(marks.trace, event, seq);
  if (event.type === "command_accepted" && DELETING.has(event.commandType)) {
    marks.deletion ??= { commandId: event.commandId, acceptSeq: seq, tombstoneSeq: undefined };
    return;
  }
  if (event.type === "session_deleting") {
    if (marks.deletion && marks.deletion.tombstoneSeq === undefined) marks.deletion.tombstoneSeq = seq;
    return;
  }
  // A restore is decided on a session without a log, so its start comes before the history it
  // brings back; a restore's start inside that history (the session was restored before) is history.
  if (event.type === "session_restoring" && !marks.restore) {
    const commandId = event.meta.commandId ?? "";
    marks.restore = { commandId, by: event.by, requestedAt: event.meta.ts, appended: 0, restored: false, after: 0 };
    return;
  }
  const restore = marks.restore;
  if (!restore) return;
  if (restore.restored) restore.after++;
  else if (event.type === "session_restored" && event.meta.commandId === restore.commandId) restore.restored = true;
  else restore.appended++;
}

/** A restore is in the log and may have steps left (it is the log's last operation). */
export const restoreOpen = (marks: LifecycleMarks): boolean => marks.restore !== undefined && marks.restore.after === 0;
