// The session engine's queues and pending writes: polls that leave messages reported as queued
// until injected, the drain's `queue_update`, and the flush of the log's pending writes.
import { type AgentMessage, type QueueKind, type SessionConfig, streamingMessageOf } from "@fleet/protocol";
import { type DraftEvent, queueUpdate, writeDrafts } from "../session-core/drafts.js";
import { affectsNextTurn } from "../session-core/session-write.js";
import { type EngineCore, NONE, nothingPolled } from "./engine-core.js";
import { sinkEmit } from "./event-sink.js";
import type { LoopEventBody } from "./types.js";

/**
 * Takes messages from the head of a queue, past the ones already polled; they stay reported as
 * queued (in the log's queues) until `announceDrain`.
 */
export function poll(core: EngineCore, kind: QueueKind, mode: SessionConfig["steeringMode"]): AgentMessage[] {
  const available = core.session.status.queues[kind].slice(core.polled[kind]);
  if (available.length === 0) return NONE;
  const drained = mode === "all" ? available : available.slice(0, 1);
  core.polled[kind] += drained.length;
  return drained;
}

/**
 * The drain's `queue_update`, just before the injected messages' first `message_start`: the queues
 * as they are at delivery, without the drained heads (messages queued meanwhile stay), which it names
 * in `delivering` for a worker that takes the run over before they are delivered.
 */
export function announceDrain(core: EngineCore): Promise<void> | undefined {
  const polled = core.polled;
  if (polled.steer + polled.followUp + polled.nextTurn === 0) return undefined;
  core.polled = nothingPolled();
  return sinkEmit(core.sink, () => {
    const queues = core.session.status.queues;
    const delivering = [
      ...queues.nextTurn.slice(0, polled.nextTurn),
      ...queues.steer.slice(0, polled.steer),
      ...queues.followUp.slice(0, polled.followUp),
    ];
    return {
      ...queueUpdate({
        steer: queues.steer.slice(polled.steer),
        followUp: queues.followUp.slice(polled.followUp),
        nextTurn: queues.nextTurn.slice(polled.nextTurn),
      }),
      delivering,
    } as LoopEventBody;
  });
}

export async function emitDrafts(core: EngineCore, drafts: readonly DraftEvent[]): Promise<void> {
  for (const draft of drafts) await sinkEmit(core.sink, draft.body as LoopEventBody, draft.id);
}

/** See `SessionEngine.flushWrites`. */
export async function flushWrites(core: EngineCore): Promise<void> {
  const session = core.session;
  while (session.pendingWrites.length > 0) {
    const pending = session.pendingWrites[0];
    if (!pending) break;
    const write = pending.write;
    const started =
      write.type === "message" && sameMessage(streamingMessageOf(session), write.message)
        ? undefined
        : core.ports.newId();
    if (core.active && affectsNextTurn(write)) {
      core.runDirty = true;
      if (write.type === "message") core.flushedMessages.push(write.message);
    }
    await emitDrafts(
      core,
      writeDrafts(write, { eventId: pending.eventId, startId: write.type === "message" ? started : undefined }),
    );
    if (session.pendingWrites[0] === pending) break; // the shell did not fold the settling event
  }
}

/** True when a logged `message_start` (read back from the log) is the message of a write. */
export function sameMessage(a: AgentMessage | undefined, b: AgentMessage): boolean {
  return a !== undefined && a.role === b.role && a.timestamp === b.timestamp && JSON.stringify(a) === JSON.stringify(b);
}
