// A draft as the writer appends it: `entry` from the log's leaf (or the draft's own parent),
// `meta` with the open run's id and the command's id. The one rule for every writer of a session.
import { ENTRY_EVENT_TYPES, type FleetEvent, openOperationId, type SessionState } from "@fleet/protocol";
import type { DraftEvent } from "../session-core/drafts.js";

const ENTRY_TYPES: ReadonlySet<string> = new Set(ENTRY_EVENT_TYPES);

export interface StampContext {
  sessionId: string;
  producer: string;
  /** `meta.ts` unless the draft carries its own. */
  now: number;
  /** `meta.runId` when the draft is not part of an open run or compaction (an engine event's own). */
  runId?: string | undefined;
}

/**
 * The wire event for `draft`, appended next to the log folded into `state`:
 * - an entry event's `entry` is `{id, parentId}` with the draft's `parentId`, else the leaf;
 * - `meta.runId` is the engine's run id when given, else the open run's or standalone compaction's
 *   (`openOperationId`; a standalone `compaction_start` opens one with its own id), except on the
 *   `compaction_end` that closes a standalone compaction;
 * - `meta.commandId` when the draft belongs to a command's acceptance.
 */
export function stampDraft(state: SessionState, draft: DraftEvent, ctx: StampContext): FleetEvent {
  return stampInto(Object.assign({}, draft.body), state, draft, ctx);
}

/**
 * `stampDraft` without the copy: sets `entry` and `meta` on `draft.body` itself, for a caller that
 * owns the body and gives it up (an engine event's body: see `EngineEvent`).
 */
export function stampOwnedDraft(state: SessionState, draft: DraftEvent, ctx: StampContext): FleetEvent {
  return stampInto(draft.body, state, draft, ctx);
}

function stampInto(target: object, state: SessionState, draft: DraftEvent, ctx: StampContext): FleetEvent {
  const event = target as Record<string, unknown>;
  const runId = ctx.runId ?? operationOf(state, draft);
  if (ENTRY_TYPES.has(draft.body.type)) {
    event.entry = { id: draft.id, parentId: draft.parentId !== undefined ? draft.parentId : state.tree.leafId };
  }
  event.meta = metaOf(draft.id, ctx.sessionId, draft.ts ?? ctx.now, runId, ctx.producer, draft.commandId);
  return event as FleetEvent;
}

/** `meta`, its optional fields present only when set (one literal per combination: fixed shapes). */
function metaOf(
  id: string,
  sessionId: string,
  ts: number,
  runId: string | undefined,
  producer: string,
  commandId: string | undefined,
): FleetEvent["meta"] {
  if (runId === undefined) {
    return commandId === undefined
      ? { v: 1, id, sessionId, ts, producer }
      : { v: 1, id, sessionId, ts, producer, commandId };
  }
  return commandId === undefined
    ? { v: 1, id, sessionId, ts, runId, producer }
    : { v: 1, id, sessionId, ts, runId, producer, commandId };
}

function operationOf(state: SessionState, draft: DraftEvent): string | undefined {
  const open = openOperationId(state);
  if (draft.body.type === "compaction_start") return open ?? draft.id;
  if (draft.body.type === "compaction_end" && state.compaction && !state.compaction.runId) return undefined;
  return open;
}
