// The three message queues of a session (pi's steering / follow-up queues plus the harness's nextTurn).
import type { QueueMode } from "../config.js";
import type { AgentMessage } from "../messages.js";

export type QueueKind = "steer" | "followUp" | "nextTurn";

export const QUEUE_KINDS = ["steer", "followUp", "nextTurn"] as const satisfies readonly QueueKind[];

/**
 * Queue contents, oldest first. Immutable: every function returns a new object when anything
 * changes and never modifies its input. The shape equals a `queue_update` event's payload.
 */
export interface MessageQueues {
  steer: readonly AgentMessage[];
  followUp: readonly AgentMessage[];
  nextTurn: readonly AgentMessage[];
}

export const emptyMessageQueues = (): MessageQueues => ({ steer: [], followUp: [], nextTurn: [] });

/** Appends `message` at the back of one queue. */
export function enqueueMessage(queues: MessageQueues, kind: QueueKind, message: AgentMessage): MessageQueues {
  return { ...queues, [kind]: [...queues[kind], message] };
}

export interface Drained {
  queues: MessageQueues;
  /** The removed messages, oldest first; `[]` when the queue was empty. */
  drained: AgentMessage[];
}

/**
 * pi's `PendingMessageQueue.drain`: mode `all` removes and returns every message, `one-at-a-time`
 * only the oldest one. An empty queue returns `queues` itself and `drained: []`.
 */
export function drainMessageQueue(queues: MessageQueues, kind: QueueKind, mode: QueueMode): Drained {
  const queue = queues[kind];
  if (queue.length === 0) return { queues, drained: [] };
  if (mode === "all") return { queues: { ...queues, [kind]: [] }, drained: queue.slice() };
  return { queues: { ...queues, [kind]: queue.slice(1) }, drained: [queue[0] as AgentMessage] };
}

/** Empties the given queues (default: all three). Unchanged queues keep their array. */
export function clearMessageQueues(
  queues: MessageQueues,
  kinds: readonly QueueKind[] = QUEUE_KINDS,
): { queues: MessageQueues; cleared: MessageQueues } {
  const next = { ...queues };
  const cleared: MessageQueues = { steer: [], followUp: [], nextTurn: [] };
  for (const kind of kinds) {
    cleared[kind] = queues[kind];
    next[kind] = [];
  }
  return { queues: next, cleared };
}

/** True when any of the given queues (default: steer and followUp, as pi's `hasQueuedMessages`) is non-empty. */
export function hasQueuedMessages(queues: MessageQueues, kinds: readonly QueueKind[] = ["steer", "followUp"]): boolean {
  return kinds.some((kind) => queues[kind].length > 0);
}

/** Fold rule for `queue_update`: the event holds the full contents, so it replaces all three queues. */
export function applyQueueUpdate(
  _queues: MessageQueues,
  event: { steer: readonly AgentMessage[]; followUp: readonly AgentMessage[]; nextTurn: readonly AgentMessage[] },
): MessageQueues {
  return { steer: event.steer, followUp: event.followUp, nextTurn: event.nextTurn };
}

/** Equality by reference of the three arrays' elements (queues never copy messages). */
export function sameQueues(a: MessageQueues, b: MessageQueues): boolean {
  return QUEUE_KINDS.every((kind) => a[kind].length === b[kind].length && a[kind].every((m, i) => m === b[kind][i]));
}
