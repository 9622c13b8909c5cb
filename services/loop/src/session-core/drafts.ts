// Events as a decision produces them: an id and a body whose `entry` the writer fills in from the
// session's leaf when it appends the event (so entries always chain on the log's own leaf).
import type { AgentMessage, EventDraft, MessageQueues, QueueKind, SessionWrite } from "@fleet/protocol";
import { enqueueMessage } from "@fleet/protocol";

/** One event to append: `id` becomes `meta.id` (and `entry.id` for an entry event). */
export interface DraftEvent {
  id: string;
  body: EventDraft;
  /** An entry's parent when it is not the leaf (a branch summary, a copied tree). */
  parentId?: string | null;
  /** `meta.commandId`: set on the events of a command's acceptance after its outcome. */
  commandId?: string;
  /** `meta.ts` when it is not the time of the append (a copied entry keeps its timestamp). */
  ts?: number;
}

/** The same drafts, marked as part of a command's acceptance. */
export const ofCommand = (commandId: string, drafts: readonly DraftEvent[]): DraftEvent[] =>
  drafts.map((d) => Object.assign({}, d, { commandId }));

/** A `queue_update` body holding the full contents of the queues. */
export const queueUpdate = (queues: MessageQueues): EventDraft => ({
  type: "queue_update",
  steer: queues.steer.slice(),
  followUp: queues.followUp.slice(),
  nextTurn: queues.nextTurn.slice(),
});

export const queueUpdateDraft = (id: string, queues: MessageQueues): DraftEvent => ({ id, body: queueUpdate(queues) });

/** `message` added at the back of one queue, announced with `queue_update`. */
export const enqueueDraft = (id: string, queues: MessageQueues, kind: QueueKind, message: AgentMessage): DraftEvent =>
  queueUpdateDraft(id, enqueueMessage(queues, kind, message));

/**
 * The events that carry out a write, in order. The one that creates the write's entry has id
 * `eventId`; a message write is `message_start` (id `startId`; left out when there is none: a flush
 * that a crash cut after it) then `message_end`.
 */
export function writeDrafts(write: SessionWrite, ids: { eventId: string; startId?: string | undefined }): DraftEvent[] {
  if (write.type !== "message") return [{ id: ids.eventId, body: write }];
  const end: DraftEvent = { id: ids.eventId, body: { type: "message_end", message: write.message } };
  if (ids.startId === undefined) return [end];
  return [{ id: ids.startId, body: { type: "message_start", message: write.message } }, end];
}
