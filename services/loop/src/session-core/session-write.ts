// pi's pending session writes, decided from the log: a write is carried out at once when nothing is
// open, and recorded as `pending_write` while a run or a compaction is open (flushed at the next
// flush point: after `turn_end`, before `agent_end`, after `compaction_end`).
import type { SessionState, SessionWrite } from "@fleet/protocol";
import { type DraftEvent, writeDrafts } from "./drafts.js";

/** True while writes must wait for a flush point: a run or a compaction is open in the log. */
export const writesDeferred = (state: SessionState): boolean => state.status.isStreaming || state.compaction !== null;

/** True for writes a running run's next LLM call must see (harness `prepareNextTurn`). */
export const affectsNextTurn = (write: SessionWrite): boolean =>
  write.type === "model_change" ||
  write.type === "thinking_level_change" ||
  write.type === "active_tools_change" ||
  write.type === "agent_change" ||
  write.type === "message";

/**
 * The events of a write requested now. `deferred` (default: `writesDeferred(state)`) records it as
 * `pending_write` (its settling event id minted now); otherwise its own events.
 */
export function decideSessionWrite(
  state: SessionState,
  write: SessionWrite,
  commandId: string,
  newId: () => string,
  deferred = writesDeferred(state),
): DraftEvent[] {
  if (deferred) {
    const id = newId();
    return [{ id, body: { type: "pending_write", commandId, write, eventId: newId() } }];
  }
  if (write.type !== "message") return writeDrafts(write, { eventId: newId() });
  const startId = newId();
  return writeDrafts(write, { startId, eventId: newId() });
}
