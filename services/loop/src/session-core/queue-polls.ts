// pi's queue polls at a run's boundaries, as pure steps: which queued messages a poll takes (by the
// queue's mode), and the drain's `queue_update` that delivers them. Shared by the engine's polls
// (`../engine/engine-queues.ts`, which keeps the run-local count of heads taken and not yet
// delivered) and the runtime core (`../decide/decide-input.ts`, which takes and delivers at once).
import type { AgentMessage, EventDraft, MessageQueues, QueueKind, QueueMode } from "@fleet/protocol";

/** Heads taken from each queue and not delivered yet (their drain's `queue_update` is not out). */
export type QueueHeads = Record<QueueKind, number>;

export const NO_MESSAGES: AgentMessage[] = [];

/**
 * What a poll of `kind` takes: the messages past the `taken` heads, all of them (`all`) or the first
 * (`one-at-a-time`). `NO_MESSAGES` when there are none.
 */
export function takeQueued(queues: MessageQueues, kind: QueueKind, taken: number, mode: QueueMode): AgentMessage[] {
  const queue = queues[kind];
  if (queue.length <= taken) return NO_MESSAGES;
  return mode === "all" ? queue.slice(taken) : queue.slice(taken, taken + 1);
}

/** True when a drain has something to deliver. */
export const anyTaken = (heads: QueueHeads): boolean => heads.steer + heads.followUp + heads.nextTurn > 0;

/**
 * The drain's `queue_update`, just before the taken messages' first `message_start`: the queues
 * without their taken heads (messages queued meanwhile stay), and the heads in `delivering`, in
 * delivery order (nextTurn, steer, followUp), for a worker that takes the run over before they are
 * delivered.
 */
export function drainUpdate(queues: MessageQueues, heads: QueueHeads): EventDraft {
  return {
    type: "queue_update",
    steer: queues.steer.slice(heads.steer),
    followUp: queues.followUp.slice(heads.followUp),
    nextTurn: queues.nextTurn.slice(heads.nextTurn),
    delivering: [
      ...queues.nextTurn.slice(0, heads.nextTurn),
      ...queues.steer.slice(0, heads.steer),
      ...queues.followUp.slice(0, heads.followUp),
    ],
  };
}
