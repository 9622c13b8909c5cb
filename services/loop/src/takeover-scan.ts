import type { FleetEvent } from "@fleet/protocol";

/**
 * True when a session whose log ends with `last` may hold work that its owner must finish after a
 * takeover (an open run or compaction, an accepted run-starting command whose run never began,
 * pending writes). Cheap, from the last event alone, and never false for such a session: every
 * event appended while a run or compaction is open carries `meta.runId`; the events a new owner or
 * an acceptance appends before the run's first event (`owner_change`, `command_accepted` and the
 * acceptance's own events, marked `meta.commandId`) are loaded and folded to find out. Only a
 * closed run (`agent_end`), a rejection, or an event appended while nothing was open lets the
 * session be skipped.
 */
export function mayNeedRecovery(last: FleetEvent): boolean {
  if (last.type === "agent_end" || last.type === "command_rejected") return false;
  if (last.meta.runId !== undefined || last.meta.commandId !== undefined) return true;
  return last.type === "owner_change" || last.type === "command_accepted";
}
