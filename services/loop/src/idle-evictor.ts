import type { ActorRegistry } from "./actor-registry.js";

/**
 * Detaches and forgets sessions that ran nothing for `idleMs` (their state is a fold of the log,
 * loaded again on the next command). Checks every `min(30 s, idleMs)`.
 */
export function startIdleEvictor(opts: { actors: ActorRegistry; idleMs: number; now: () => number }): { stop(): void } {
  const timer = setInterval(
    async () => {
      for (const { sessionId, actor } of opts.actors.entries()) {
        const loaded = await actor.catch(() => undefined);
        if (loaded && !loaded.isRunning && opts.now() - loaded.lastUsed > opts.idleMs) {
          loaded.detach();
          opts.actors.drop(sessionId);
        }
      }
    },
    Math.min(30_000, opts.idleMs),
  );
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
