// Pending approvals per session, folded incrementally: each query reads only the events since the last.
import type { FleetClient } from "@fleet/client";
import { decodeEvent, STREAMS } from "@fleet/protocol";
import { readSubject } from "@fleet/runtime";
import { foldPendingApprovals, type PendingApproval, type PendingApprovals } from "./pending-approvals.js";

export interface ApprovalsIndex {
  /** The pending approvals of these sessions, oldest request first. */
  pending(sessionIds: readonly string[]): Promise<PendingApproval[]>;
}

/** At most this many sessions are remembered; the least recently asked is forgotten first. */
const MAX_SESSIONS = 10_000;

export function createApprovalsIndex(client: FleetClient): ApprovalsIndex {
  const folds = new Map<string, { nextSeq: number; pending: PendingApprovals }>();

  const catchUp = async (sessionId: string): Promise<PendingApprovals> => {
    let fold = folds.get(sessionId) ?? { nextSeq: 1, pending: new Map() };
    folds.delete(sessionId);
    const records = readSubject(client.js, client.jsm, STREAMS.events.name, client.eventSubject(sessionId), {
      fromSeq: fold.nextSeq,
    });
    for await (const record of records) {
      const decoded = decodeEvent(record.data);
      const pending = decoded.ok ? foldPendingApprovals(fold.pending, record.seq, decoded.value) : fold.pending;
      fold = { nextSeq: record.seq + 1, pending };
    }
    folds.set(sessionId, fold);
    if (folds.size > MAX_SESSIONS) folds.delete(folds.keys().next().value as string);
    return fold.pending;
  };

  return {
    async pending(sessionIds) {
      const all = await Promise.all(sessionIds.map(catchUp));
      return all.flatMap((p) => [...p.values()]).sort((a, b) => a.requestedAt - b.requestedAt || a.seq - b.seq);
    },
  };
}
