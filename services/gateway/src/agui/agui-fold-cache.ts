// The AG-UI fold of recently streamed threads, so the next stream of a thread folds only the events
// appended since, instead of the whole log on every run.
import type { FleetClient } from "@fleet/client";
import type { FramePosition } from "./agui-cursor.js";
import type { AguiProjection } from "./agui-projection.js";

/** A thread's projection after the event at `seq`, and the last frame it had yielded by then. */
export interface AguiFold {
  seq: number;
  projection: AguiProjection;
  last: { run: string; terminal: boolean } | null;
}

/**
 * Whether a stream that starts after `after` can start from `fold`: the event at `after.seq` must
 * be folded again when the stream starts inside its frames (a `<seq>.<k>` id), since its frames are
 * named by number.
 */
export const foldUsable = (fold: AguiFold, after: FramePosition): boolean =>
  after.k === Number.POSITIVE_INFINITY ? fold.seq <= after.seq : fold.seq < after.seq;

export interface AguiFoldCache {
  /** The cached fold of a thread usable for a stream starting after `after`, if any (checked still stored). */
  get(client: FleetClient, key: string, sessionId: string, after: FramePosition): Promise<AguiFold | undefined>;
  /** Keeps `fold` unless a later one of the thread is kept already. */
  put(key: string, fold: AguiFold): void;
}

/**
 * Contract: a fold is the projection of the log up to its `seq` and is never changed (projections
 * are immutable), so folding the later events onto it gives the same frames as a fold from the
 * start. A fold whose last event is no longer stored (the session was deleted or archived, and maybe
 * created again) is not used. At most `maxEntries` threads are kept; the least recently used goes
 * first. Keys name the tenant as well as the thread.
 */
export function createAguiFoldCache(maxEntries: number): AguiFoldCache {
  const folds = new Map<string, AguiFold>();
  return {
    async get(client, key, sessionId, after) {
      const fold = folds.get(key);
      if (!fold || !foldUsable(fold, after)) return undefined;
      const msg = await client.jsm.direct.getMessage(client.eventStream(sessionId), { seq: fold.seq });
      if (msg === null || msg.subject !== client.eventSubject(sessionId)) {
        folds.delete(key);
        return undefined;
      }
      folds.delete(key);
      folds.set(key, fold);
      return fold;
    },
    put(key, fold) {
      const kept = folds.get(key);
      if (kept && kept.seq >= fold.seq) return;
      folds.delete(key);
      folds.set(key, fold);
      if (folds.size > maxEntries) folds.delete(folds.keys().next().value as string);
    },
  };
}
