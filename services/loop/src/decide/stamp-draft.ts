// A draft as the writer appends it: `entry` from the log's leaf (or the draft's own parent),
// `meta` with the open run's id and the command's id. The one rule for every writer of a session.
import { ENTRY_EVENT_TYPES, type FleetEvent, openOperationId, type SessionState } from "@fleet/protocol";
import type { DraftEvent } from "./drafts.js";

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
  const runId = ctx.runId ?? operationOf(state, draft);
  const meta = {
    v: 1 as const,
    id: draft.id,
    sessionId: ctx.sessionId,
    ts: draft.ts ?? ctx.now,
    ...(runId !== undefined ? { runId } : {}),
    producer: ctx.producer,
    ...(draft.commandId !== undefined ? { commandId: draft.commandId } : {}),
  };
  if (!ENTRY_TYPES.has(draft.body.type)) return { ...draft.body, meta } as FleetEvent;
  const parentId = draft.parentId !== undefined ? draft.parentId : state.tree.leafId;
  return { ...draft.body, entry: { id: draft.id, parentId }, meta } as FleetEvent;
}

function operationOf(state: SessionState, draft: DraftEvent): string | undefined {
  const open = openOperationId(state);
  if (draft.body.type === "compaction_start") return open ?? draft.id;
  if (draft.body.type === "compaction_end" && state.compaction && !state.compaction.runId) return undefined;
  return open;
}
