// What a session's log shows as open, and the open-work index operations that follow from it
// (PROTOCOL change 41). Pure: the shell (`createIndexEntry`) carries the operations out.
import { decideReplayTurn, type FleetEvent, type SessionState } from "@fleet/protocol";

/** Kinds of open work: each is something a new owner must finish after a takeover. */
export type OpenWorkKind = "run" | "accepted_run" | "compaction" | "pending_writes" | "lifecycle" | "replay";

/**
 * The open work of a session: an open run (including one waiting at an approval gate or for tool
 * results), an accepted run-starting command whose run never began, an open compaction, writes
 * still pending, a replay with turns to run, a deletion or archive accepted and not finished, or a restore not finished
 * (`restoring`: only the shell knows when its last steps, which are not in the session's log, are
 * done). Empty: nothing a takeover has to resume. Reads the fold without settling streamed deltas.
 */
export function openWorkOf(state: SessionState, restoring: boolean): OpenWorkKind[] {
  const open: OpenWorkKind[] = [];
  if (state.cursor.kind !== "idle") open.push("run");
  else if (state.cursor.pendingTrigger) open.push("accepted_run");
  if (state.compaction) open.push("compaction");
  if (state.pendingWrites.length > 0) open.push("pending_writes");
  if (state.deleting || restoring) open.push("lifecycle");
  // A replay with turns still to run (change 51): the next owner starts them.
  const replay = decideReplayTurn(state).kind;
  if (replay === "turn" || replay === "wait") open.push("replay");
  return open;
}

/**
 * Events that never open work on a session that has none: an ownership change and a rejection.
 * Every other event may (an acceptance, a run's or a compaction's start, a pending write, a
 * tombstone, a restore's start), so its entry is written before it is appended.
 */
const NEVER_OPENS: ReadonlySet<FleetEvent["type"]> = new Set(["owner_change", "command_rejected"]);

/** Whether the session's entry is in the index, as far as its writer knows (`unknown` once loaded). */
export type IndexStatus = "listed" | "unlisted" | "unknown";
export type IndexOp = "mark" | "unmark";

/**
 * Before `event` is appended: `mark` when the entry must be durable first. Together with
 * `whenSettled` this keeps the invariant the takeover relies on: whenever the log shows open work,
 * the entry is in the index (an entry without open work is harmless: the next holder loads the
 * session, finds nothing to finish and removes it).
 */
export function beforeAppend(status: IndexStatus, event: FleetEvent): IndexOp | null {
  return status !== "listed" && !NEVER_OPENS.has(event.type) ? "mark" : null;
}

/**
 * Once no append of the session is in flight (so no event the fold has not seen can open work):
 * `unmark` when the log shows nothing open and the entry may be listed.
 */
export function whenSettled(status: IndexStatus, open: readonly OpenWorkKind[]): IndexOp | null {
  return open.length === 0 && status !== "unlisted" ? "unmark" : null;
}

export const statusAfter = (op: IndexOp): IndexStatus => (op === "mark" ? "listed" : "unlisted");
