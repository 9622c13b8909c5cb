import type { ProjectedSession } from "./session-state.js";

/**
 * In-memory LRU of folded sessions, keyed by namespace and session id, bounded by the total number of
 * entries held. A cached session is a snapshot at its `lastSeq`; readers compare that with Redis and
 * extend it with what was appended since, so the cache never serves a state it did not read or write.
 */
export interface SessionCache {
  get(ns: string, sessionId: string): ProjectedSession | undefined;
  /** Keeps the newer of the cached and the given state (by lastSeq). */
  put(ns: string, session: ProjectedSession): void;
  delete(ns: string, sessionId: string): void;
  clear(): void;
  readonly size: number;
}

export function createSessionCache(maxEntries: number): SessionCache {
  const map = new Map<string, ProjectedSession>();
  let weight = 0;
  const key = (ns: string, sid: string) => `${ns}\u0000${sid}`;
  const w = (s: ProjectedSession) => s.tree.entries.length + 1;
  return {
    get(ns, sessionId) {
      const k = key(ns, sessionId);
      const hit = map.get(k);
      if (hit) {
        map.delete(k);
        map.set(k, hit);
      }
      return hit;
    },
    put(ns, session) {
      const k = key(ns, session.sessionId);
      const old = map.get(k);
      if (old) {
        if (old.lastSeq > session.lastSeq) return;
        weight -= w(old);
        map.delete(k);
      }
      map.set(k, session);
      weight += w(session);
      for (const [victim, s] of map) {
        if (weight <= maxEntries || map.size <= 1) break;
        map.delete(victim);
        weight -= w(s);
      }
    },
    delete(ns, sessionId) {
      const k = key(ns, sessionId);
      const old = map.get(k);
      if (old) {
        weight -= w(old);
        map.delete(k);
      }
    },
    clear() {
      map.clear();
      weight = 0;
    },
    get size() {
      return map.size;
    },
  };
}
