// The store's notice that its indexes took in a batch of events (PROTOCOL change 74): what a view
// that reads the indexes (`list_sessions`, `list_approvals`) waits for before it reloads, where the
// events themselves can arrive before the store applied them.
import { z } from "zod";
import { SessionId } from "./ids.js";

/** Most sessions one notice names; a batch that changed more is announced in several notices. */
export const MAX_NOTICE_SESSIONS = 1_000;

/** Event types after which a session's pending approvals may differ. */
export const APPROVAL_CHANGING_TYPES: ReadonlySet<string> = new Set([
  "tool_approval_requested",
  "tool_approval_resolved",
  "agent_end",
  "session_deleting",
]);

/**
 * Published by the store on `fleet.store.applied.<g>` (core NATS) once a batch of group g's events
 * is written to its indexes and acked: every event of group g's stream up to `seq` is now in them.
 * A notice with `all: true` (PROTOCOL change 75) says any session, and any approval, may read
 * differently now: a store instance started applying group g, its indexes were switched to another
 * namespace (a rebuild, or the heal after Redis lost its data), or the group's notices may have been
 * lost (the store's connection came back, or a publish failed). `sessions` is empty, and the
 * namespace holds every event of group g up to `seq`.
 */
export const StoreAppliedNotice = z.object({
  group: z.number().int().nonnegative(),
  /**
   * Stream sequence of the batch's last event, in group g's stream. For an `all` notice, a sequence
   * up to which the namespace holds every event of the group (0: none of its events yet).
   */
  seq: z.number().int().nonnegative(),
  /** The sessions whose events the batch held (or that it removed). */
  sessions: z.array(SessionId).max(MAX_NOTICE_SESSIONS),
  /** One of those events may have changed pending approvals (`APPROVAL_CHANGING_TYPES`). */
  approvals: z.boolean(),
  /** Anything the indexes answer may differ (a store took the group up, a namespace switch, or lost notices): load everything again. */
  all: z.literal(true).optional(),
});
export type StoreAppliedNotice = z.infer<typeof StoreAppliedNotice>;

/**
 * The notices of one applied batch (pure): its sessions in slices of `MAX_NOTICE_SESSIONS`, each
 * notice with the whole batch's `approvals` and `seq`. None for a batch that named no session.
 */
export function storeAppliedNotices(
  group: number,
  seq: number,
  sessions: readonly string[],
  approvals: boolean,
): StoreAppliedNotice[] {
  const notices: StoreAppliedNotice[] = [];
  for (let i = 0; i < sessions.length; i += MAX_NOTICE_SESSIONS) {
    notices.push({ group, seq, sessions: sessions.slice(i, i + MAX_NOTICE_SESSIONS), approvals });
  }
  return notices;
}

/** The `all` notice (pure): group g's indexes hold at least its stream up to `seq`. */
export const storeAllNotice = (group: number, seq: number): StoreAppliedNotice => ({
  group,
  seq,
  sessions: [],
  approvals: true,
  all: true,
});
