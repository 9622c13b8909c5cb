import type { SessionActor } from "./session-actor.js";

/** One load of a session on this worker: its entry, named by `loadId` (unique per registry). */
export interface ActorEntry {
  sessionId: string;
  partition: number;
  loadId: number;
  actor: Promise<SessionActor>;
}

/**
 * The sessions loaded on one worker. An entry exists from the start of its load: a second
 * `get` of a session being loaded waits for the same load. A load that fails leaves no entry.
 * An actor that dies or lets its session go drops its own entry only (`drop` with its `loadId`):
 * after a lease was lost and taken again, the old epoch's actor, fenced late, must not drop the
 * entry of the new epoch's load (which would leave that actor running unlisted, and a second actor
 * of the session loaded on its next command).
 */
export interface ActorRegistry {
  /** The session's actor, loaded (and recovered) by `load` when it is not there yet. */
  get(sessionId: string, partition: number): Promise<SessionActor>;
  /**
   * Forgets a session (its actor was detached or died): only the entry of load `loadId` when it is
   * given (nothing when the session's entry is another load's by now). True when an entry went.
   */
  drop(sessionId: string, loadId?: number): boolean;
  /** Loaded (or loading) sessions, with their partitions. */
  entries(): ActorEntry[];
  keys(): string[];
}

export function createActorRegistry(opts: {
  /** Loads a session; `loadId` names this load's entry (for the actor's own `drop`). */
  load: (sessionId: string, partition: number, loadId: number) => Promise<SessionActor>;
  onDrop: (sessionId: string) => void;
  onLoadFailed: (sessionId: string, err: unknown) => void;
}): ActorRegistry {
  const actors = new Map<string, ActorEntry>();
  let loads = 0;
  const drop = (sessionId: string, loadId?: number): boolean => {
    const entry = actors.get(sessionId);
    if (!entry || (loadId !== undefined && entry.loadId !== loadId)) return false;
    actors.delete(sessionId);
    opts.onDrop(sessionId);
    return true;
  };
  return {
    get(sessionId, partition) {
      const existing = actors.get(sessionId);
      if (existing) return existing.actor;
      const loadId = ++loads;
      const actor = opts.load(sessionId, partition, loadId);
      actors.set(sessionId, { sessionId, partition, loadId, actor });
      actor.catch((err) => {
        opts.onLoadFailed(sessionId, err);
        drop(sessionId, loadId);
      });
      return actor;
    },
    drop,
    entries: () => [...actors.values()],
    keys: () => [...actors.keys()],
  };
}
