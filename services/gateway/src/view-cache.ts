// The last folded view of recently read sessions, so `GET /v1/sessions/{id}` folds only the events
// appended since, instead of replaying the whole log on every request.
import type { FleetClient, ReplayResult } from "@fleet/client";

export interface ViewCache {
  /** The session (view and spend) as of now: the cached one plus the events after it (the whole log when not cached). */
  current(sessionId: string): Promise<ReplayResult>;
  readonly size: number;
}

/**
 * Contract: a cached view is a fold of the log up to its `seq` and is never changed (views are
 * immutable), so folding the later events onto it equals a full replay. A view whose last event is
 * no longer stored (the session was deleted or archived, and maybe created again) is dropped and the
 * log folded afresh. At most `maxEntries` sessions are kept; the least recently read goes first.
 */
export function createViewCache(client: FleetClient, maxEntries: number): ViewCache {
  const views = new Map<string, ReplayResult>();
  return {
    async current(sessionId) {
      let cached = views.get(sessionId);
      if (cached && !(await stillStored(client, sessionId, cached.seq))) cached = undefined;
      const view = await client.replay(sessionId, cached ? { from: cached } : {});
      views.delete(sessionId);
      if (view.seq > 0 && maxEntries > 0) {
        views.set(sessionId, view);
        if (views.size > maxEntries) views.delete(views.keys().next().value as string);
      }
      return view;
    },
    get size() {
      return views.size;
    },
  };
}

/** Whether the session's event at stream sequence `seq` is still stored (a deletion purges it). */
async function stillStored(client: FleetClient, sessionId: string, seq: number): Promise<boolean> {
  const msg = await client.jsm.direct.getMessage(client.eventStream(sessionId), { seq });
  return msg !== null && msg.subject === client.eventSubject(sessionId);
}
