// The store's notices that a batch is in its indexes (PROTOCOL change 74): published on
// `fleet.store.applied.<g>` once the batch's writes are in Redis, so a view that reloads from the
// indexes on a notice reads what the notice names.
import {
  APPROVAL_CHANGING_TYPES,
  type StoreAppliedNotice,
  storeAllNotice,
  storeAppliedNotices,
  subjects,
} from "@fleet/protocol";
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

/**
 * Announces applied batches on core NATS. A notice may be lost (a failed publish, or messages in
 * flight when the connection dropped); the group's next notice then says `all` (`noticesFor`).
 */
export type AppliedAnnouncer = (group: number, seq: number, change: AppliedChange) => void;

/** A group whose last notice failed to publish. */
const LOST = -1;

/**
 * The notices of one applied change (pure): the change's own, or one `all` notice when the change
 * says so or the group's notices may have been lost since its last one went out. `announced` maps
 * each group to the connection epoch its last notice went out whole in (`LOST` when a publish
 * failed); `epoch` is the connection's now (it grows each time the connection comes back: what was
 * in flight before is gone). A group with no notice yet has lost none. An `all` notice's `seq` is
 * the batch's: the indexes hold every event of the group up to it.
 */
export function noticesFor(
  announced: ReadonlyMap<number, number>,
  epoch: number,
  group: number,
  seq: number,
  change: AppliedChange,
): StoreAppliedNotice[] {
  const last = announced.get(group);
  if ("all" in change || (last !== undefined && last !== epoch)) return [storeAllNotice(group, seq)];
  return storeAppliedNotices(group, seq, change.sessions, change.approvals);
}

/**
 * Notices are built from subjects the projector already parsed (session ids checked), so they are
 * not validated again here; the gateway validates each one it receives (`StoreAppliedNotice`).
 */
export function createAppliedAnnouncer(nc: NatsConnection, logger: Logger): AppliedAnnouncer {
  const encoder = new TextEncoder();
  const announced = new Map<number, number>();
  let epoch = 0;
  void (async () => {
    for await (const s of nc.status()) if (s.type === "reconnect") epoch++;
  })().catch(() => undefined);
  return (group, seq, change) => {
    let sent = true;
    for (const notice of noticesFor(announced, epoch, group, seq, change)) {
      try {
        nc.publish(subjects.storeApplied(group), encoder.encode(JSON.stringify(notice)));
      } catch (err) {
        sent = false;
        logger.warn({ evt: "store_notice_failed", group, seq, err }, "publishing an applied notice failed");
      }
    }
    announced.set(group, sent ? epoch : LOST);
  };
}
