// The session engine's queues and pending writes: polls that leave messages reported as queued
// until injected, the drain's `queue_update`, and the flush of the log's pending writes.
import {
  type AgentMessage,
  type QueueKind,
  type QueueMode,
  type SessionWrite,
  streamingMessageOf,
} from "@fleet/protocol";
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
    noteFlushed(core, write);
    const streaming = write.type === "message" ? streamingMessageOf(session) : undefined;
    await emitDrafts(core, pendingWriteDrafts(pending, streaming, core.ports.newId));
    if (session.pendingWrites[0] === pending) break; // the shell did not fold the settling event
  }
}

/** A write carried out during a run: the run's next LLM call sees it (`prepareNextTurn`). */
function noteFlushed(core: EngineCore, write: SessionWrite): void {
  if (core.active && affectsNextTurn(write)) {
    core.runDirty = true;
    if (write.type === "message") core.flushedMessages.push(write.message);
  }
}

/**
 * Runs a decision of the session's fold (`sinkEmitDecided`'s `decide`) and notes the pending
 * writes its drafts carry out (a draft under the id a write's `pending_write` named), as
 * `flushWrites` does.
 */
export function decideNotingWrites(core: EngineCore, decide: () => readonly DraftEvent[]): readonly DraftEvent[] {
  const pending = core.session.pendingWrites;
  if (pending.length === 0) return decide();
  const writes = pending.slice();
  const drafts = decide();
  for (const { eventId, write } of writes) {
    for (const draft of drafts) {
      if (draft.id !== eventId) continue;
      noteFlushed(core, write);
      break;
    }
  }
  return drafts;
}
