// The store's notices that a batch is in its indexes (PROTOCOL change 74): published on
// `fleet.store.applied.<g>` once the batch's writes are in Redis, so a view that reloads from the
// indexes on a notice reads what the notice names.
import { APPROVAL_CHANGING_TYPES, storeAllNotice, storeAppliedNotices, subjects } from "@fleet/protocol";
import type { Logger } from "@fleet/runtime";
import type { NatsConnection } from "@nats-io/transport-node";
import type { PreparedBatch } from "./projector.js";

/** What one prepared batch changes in the indexes (pure): its sessions, and whether approvals may differ. */
export function changesOfBatch(batch: PreparedBatch): { sessions: string[]; approvals: boolean } {
  let approvals = false;
  for (const { events } of batch.sessions.values()) {
    if (approvals) break;
    approvals = events.some((d) => d.event !== null && APPROVAL_CHANGING_TYPES.has(d.event.type));
  }
  return { sessions: [...batch.sessions.keys()], approvals };
}

/** What the indexes took in: a batch's sessions, or (`all`) anything (a worker took the group up, or a namespace switch). */
export type AppliedChange = { sessions: string[]; approvals: boolean } | { all: true };

/** Announces applied batches on core NATS; a failed publish is logged and lost (the next batch's notice follows). */
export type AppliedAnnouncer = (group: number, seq: number, change: AppliedChange) => void;

/**
 * Notices are built from subjects the projector already parsed (session ids checked), so they are
 * not validated again here; the gateway validates each one it receives (`StoreAppliedNotice`).
 */
export function createAppliedAnnouncer(nc: NatsConnection, logger: Logger): AppliedAnnouncer {
  const encoder = new TextEncoder();
  return (group, seq, change) => {
    const notices =
      "all" in change
        ? [storeAllNotice(group, seq)]
        : storeAppliedNotices(group, seq, change.sessions, change.approvals);
    for (const notice of notices) {
      try {
        nc.publish(subjects.storeApplied(group), encoder.encode(JSON.stringify(notice)));
      } catch (err) {
        logger.warn({ evt: "store_notice_failed", group, seq, err }, "publishing an applied notice failed");
      }
    }
  };
}
