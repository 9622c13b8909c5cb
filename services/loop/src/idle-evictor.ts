import type { ActorRegistry } from "./actor-registry.js";

/**
 * Detaches and forgets sessions that ran nothing for `idleMs` (their state is a fold of the log,
 * loaded again on the next command), after storing a long one's snapshot at its last event.
 * Checks every `min(30 s, idleMs)`.
 */
export function startIdleEvictor(opts: { actors: ActorRegistry; idleMs: number; now: () => number }): { stop(): void } {
  const timer = setInterval(
    async () => {
      for (const { sessionId, actor, loadId } of opts.actors.entries()) {
        const loaded = await actor.catch(() => undefined);
        const idle = () => loaded && !loaded.isRunning && opts.now() - loaded.lastUsed > opts.idleMs;
        if (loaded && idle()) {
          // Its next load then reads its snapshot and no event; a command meanwhile keeps it.
          await loaded.snapshotBeforeLeaving();
          if (!idle()) continue;
          loaded.detach();
          opts.actors.drop(sessionId, loadId);
        }
      }
    },
    Math.min(30_000, opts.idleMs),
  );
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
