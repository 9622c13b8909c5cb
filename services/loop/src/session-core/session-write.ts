// pi's pending session writes, decided from the log: a write is carried out at once when nothing is
// open, and recorded as `pending_write` while a run or a compaction is open (flushed at the next
// flush point: after `turn_end`, before `agent_end`, after `compaction_end`).
import type { AgentMessage, PendingWrite, SessionState, SessionWrite } from "@fleet/protocol";
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

/** True when a logged `message_start` (read back from the log) is the message of a write. */
export function sameMessage(a: AgentMessage | undefined, b: AgentMessage): boolean {
  return a !== undefined && a.role === b.role && a.timestamp === b.timestamp && JSON.stringify(a) === JSON.stringify(b);
}

/**
 * The events that carry out one pending write at a flush point, settled by the event its
 * `pending_write` named. A message write whose `message_start` is already the log's streaming
 * message (`streaming`: a flush that a crash cut after it) gets no second one.
 */
export function pendingWriteDrafts(
  pending: PendingWrite,
  streaming: AgentMessage | undefined,
  newId: () => string,
): DraftEvent[] {
  const write = pending.write;
  if (write.type !== "message") return writeDrafts(write, { eventId: pending.eventId });
  const startId = sameMessage(streaming, write.message) ? undefined : newId();
  return writeDrafts(write, { eventId: pending.eventId, startId });
}

/** Every pending write carried out at a flush point, in acceptance order (`pendingWriteDrafts`). */
export function flushDrafts(
  pending: readonly PendingWrite[],
  streaming: AgentMessage | undefined,
  newId: () => string,
): DraftEvent[] {
  const drafts: DraftEvent[] = [];
  for (let i = 0; i < pending.length; i++) {
    const write = pending[i];
    if (write) drafts.push(...pendingWriteDrafts(write, i === 0 ? streaming : undefined, newId));
  }
  return drafts;
}
