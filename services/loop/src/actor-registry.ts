import type { SessionActor } from "./session-actor.js";

/**
 * The sessions loaded on one worker. An entry exists from the start of its load: a second
 * `get` of a session being loaded waits for the same load. A load that fails leaves no entry.
 */
export interface ActorRegistry {
  /** The session's actor, loaded (and recovered) by `load` when it is not there yet. */
  get(sessionId: string, partition: number): Promise<SessionActor>;
  /** Forgets a session (its actor was detached or died). */
  drop(sessionId: string): void;
  /** Loaded (or loading) sessions, with their partitions. */
  entries(): Array<{ sessionId: string; partition: number; actor: Promise<SessionActor> }>;
  keys(): string[];
}

export function createActorRegistry(opts: {
  load: (sessionId: string, partition: number) => Promise<SessionActor>;
  onDrop: (sessionId: string) => void;
  onLoadFailed: (sessionId: string, err: unknown) => void;
}): ActorRegistry {
  const actors = new Map<string, { partition: number; actor: Promise<SessionActor> }>();
  const drop = (sessionId: string) => {
    actors.delete(sessionId);
    opts.onDrop(sessionId);
  };
  return {
    get(sessionId, partition) {
      const existing = actors.get(sessionId);
      if (existing) return existing.actor;
      const actor = opts.load(sessionId, partition);
      const entry = { partition, actor };
      actors.set(sessionId, entry);
      actor.catch((err) => {
        opts.onLoadFailed(sessionId, err);
        if (actors.get(sessionId) === entry) drop(sessionId);
      });
      return actor;
    },
    drop,
    entries: () => [...actors].map(([sessionId, a]) => ({ sessionId, ...a })),
    keys: () => [...actors.keys()],
  };
}
