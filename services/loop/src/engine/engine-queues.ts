// The session engine's queues and pending writes: polls that leave messages reported as queued
// until injected, the drain's `queue_update`, and the flush of the log's pending writes.
import { type AgentMessage, type QueueKind, type QueueMode, streamingMessageOf } from "@fleet/protocol";
import type { DraftEvent } from "../session-core/drafts.js";
import { anyTaken, drainUpdate, takeQueued } from "../session-core/queue-polls.js";
import { affectsNextTurn, pendingWriteDrafts } from "../session-core/session-write.js";
import { type EngineCore, nothingPolled } from "./engine-core.js";
import { sinkEmit } from "./event-sink.js";
import type { LoopEventBody } from "./types.js";

/**
 * A poll of one queue (`takeQueued` past the heads already taken); the messages stay reported as
 * queued (in the log's queues) until `announceDrain`.
 */
export function poll(core: EngineCore, kind: QueueKind, mode: QueueMode): AgentMessage[] {
  const taken = takeQueued(core.session.status.queues, kind, core.polled[kind], mode);
  core.polled[kind] += taken.length;
  return taken;
}

/** The drain's `queue_update` (`drainUpdate`), just before the injected messages' first `message_start`. */
export function announceDrain(core: EngineCore): Promise<void> | undefined {
  const polled = core.polled;
  if (!anyTaken(polled)) return undefined;
  core.polled = nothingPolled();
  return sinkEmit(core.sink, () => drainUpdate(core.session.status.queues, polled) as LoopEventBody);
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
    if (core.active && affectsNextTurn(write)) {
      core.runDirty = true;
      if (write.type === "message") core.flushedMessages.push(write.message);
    }
    const streaming = write.type === "message" ? streamingMessageOf(session) : undefined;
    await emitDrafts(core, pendingWriteDrafts(pending, streaming, core.ports.newId));
    if (session.pendingWrites[0] === pending) break; // the shell did not fold the settling event
  }
}
