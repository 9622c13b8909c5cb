import type { Logger } from "@fleet/runtime";
import { helpBuild } from "./group-build.js";
import { type NamespaceControl, NamespaceLostError } from "./namespace.js";
import { buildIfMissing, deleteNamespace, RebuildLockedError, type ReplayDeps } from "./rebuild.js";

export interface SelfHealer {
  /** Checks the control record now (coalesced with a check in flight); heals when it is gone. */
  poke(): void;
  /** True while this instance is rebuilding after a loss. */
  readonly healing: boolean;
  /** Settles after the first check (and the build it started, if any). */
  readonly firstCheck: Promise<void>;
  stop(): Promise<void>;
}

export interface SelfHealOptions {
  deps: ReplayDeps;
  namespaces: NamespaceControl;
  logger: Logger;
  /** How often the control record is checked without a poke (default 1 s). */
  intervalMs?: number;
  /** TTL of the rebuild lock while healing: how long another instance waits on a dead healer (default 10 s). */
  lockMs?: number;
  onHealed?: (result: { ns: string; lastSeq: number; events: number; ms: number }) => void;
}

/**
 * Heals the store after Redis lost its data (FLUSHALL, a restart without persistence), and builds the
 * first namespace of a fresh store. Whenever `<prefix>:ctl` is missing, one instance (the holder of
 * the rebuild lock) replays the whole stream into a fresh namespace and switches to it; the others
 * keep checking. Meanwhile the projectors pause and queries answer `unavailable`. A namespace
 * flushed while it was built is never switched to (its birth marker is gone); the build starts over.
 */
export function startSelfHealer(opts: SelfHealOptions): SelfHealer {
  const { logger } = opts;
  let lastSeenNs: string | undefined;
  let running: Promise<void> | undefined;
  let healing = false;
  let stopped = false;
  let failures = 0;

  /** Heals if needed, then takes open groups of a rebuild that another instance offers. */
  async function check() {
    await heal();
    const groups = await helpBuild(opts.deps);
    if (groups > 0) logger.info({ evt: "store_rebuild_helped", groups }, "replayed stream groups of a rebuild");
  }

  async function heal() {
    const active = await opts.namespaces.peek();
    if (active) {
      lastSeenNs = active.ns;
      return;
    }
    healing = true;
    const lost = lastSeenNs;
    // Never having seen a namespace, this instance cannot tell a loss from a fresh Redis: a start on
    // an empty Redis is the common case and is logged at INFO; a namespace seen and then gone, at WARN.
    const fresh = lost === undefined;
    const level = fresh ? "info" : "warn";
    logger[level](
      { evt: "store_heal_started", lostNs: lost ?? null, fresh },
      fresh
        ? "no projection in Redis at start: building it from the log"
        : "no active namespace: rebuilding from the log",
    );
    try {
      const result = await buildIfMissing(opts.deps, opts.lockMs ?? 10_000);
      if (!result) return;
      lastSeenNs = result.ns;
      failures = 0;
      logger[level](
        {
          evt: "store_healed",
          ns: result.ns,
          lastSeq: result.lastSeq,
          events: result.events,
          ms: Math.round(result.ms),
          fresh,
        },
        fresh
          ? "built from the log: Redis held no projection at start"
          : "rebuilt from the log after Redis lost its data",
      );
      opts.onHealed?.(result);
      // What projectors wrote into the lost namespace after the loss is garbage nobody reads.
      if (lost && lost !== result.ns) await deleteNamespace(opts.deps.redis, opts.deps.prefix, lost);
    } catch (err) {
      if (err instanceof RebuildLockedError) return;
      failures++;
      const lostAgain = err instanceof NamespaceLostError;
      logger.warn({ evt: "store_heal_failed", err, failures, lostAgain }, "healing failed; retrying");
    } finally {
      healing = false;
    }
  }

  function poke(): Promise<void> | undefined {
    if (stopped || running) return running;
    running = check()
      .catch((err) => logger.warn({ evt: "store_heal_check_failed", err }, "checking the control record failed"))
      .finally(() => {
        running = undefined;
      });
    return running;
  }

  const timer = setInterval(poke, opts.intervalMs ?? 1_000);
  const firstCheck = poke() ?? Promise.resolve();
  return {
    poke: () => void poke(),
    firstCheck,
    get healing() {
      return healing;
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
