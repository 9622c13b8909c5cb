import { randomUUID } from "node:crypto";
import type { Logger } from "@fleet/runtime";
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { buildShared, replayGroupInto, replayProjector } from "./group-build.js";
import { bornKey, namespacePattern, rebuildLockKey } from "./keys.js";
import { RELEASE_LOCK } from "./lua-scripts.js";
import { createNamespaceControl, NamespaceLostError, newNamespaceId } from "./namespace.js";
import type { Projector } from "./projector.js";
import { type RedisClient, scanKeys, unlinkOn } from "./redis-client.js";

export interface ReplayDeps {
  js: JetStreamClient;
  jsm: JetStreamManager;
  redis: RedisClient;
  prefix: string;
  partitions: number;
  /** K: the log's stream groups, each replayed from its own stream. */
  groups: number;
  logger: Logger;
  cacheEntries?: number;
  maxBatch?: number;
}

export interface BuildResult {
  ns: string;
  /** Every event of group g's stream with seq <= lastSeqs[g] is in the namespace. */
  lastSeqs: number[];
  /** Group 0's (the whole log's with K = 1). */
  lastSeq: number;
  /** Events this process replayed (in a shared build, other instances replay groups too). */
  events: number;
  ms: number;
  projector: Projector;
}

/**
 * Replays every group's stream into namespace `ns` (fresh), each catching up with its stream until
 * the remaining tail is small, and records its group's `lastSeq` as every partition's applied
 * position. `shared`: the groups are offered to every store instance (`group-build.ts`), each taking
 * one at a time under its group lease; otherwise this process replays the K groups concurrently.
 */
export async function buildNamespace(
  deps: ReplayDeps,
  ns: string,
  opts: { shared?: boolean } = {},
): Promise<BuildResult> {
  const started = performance.now();
  const projector = replayProjector(deps);
  await createNamespaceControl(deps.redis, deps.prefix).markBorn(ns);
  let events = 0;
  const count = (size: number) => {
    events += size;
  };
  const lastSeqs = opts.shared
    ? await buildShared(deps, ns, projector, count)
    : await Promise.all(
        Array.from({ length: deps.groups }, (_, group) => replayGroupInto(deps, projector, ns, group, count)),
      );
  return { ns, lastSeqs, lastSeq: lastSeqs[0] ?? 0, events, ms: performance.now() - started, projector };
}

export interface RebuildResult {
  ns: string;
  oldNs: string | null;
  lastSeq: number;
  events: number;
  ms: number;
  deletedKeys: number;
}

/** Another rebuild (an operator's, or another instance healing) holds the lock. */
export class RebuildLockedError extends Error {
  constructor(lockKey: string) {
    super(`another rebuild holds ${lockKey}`);
    this.name = "RebuildLockedError";
  }
}

/** Runs `work` while holding `<prefix>:lock:rebuild` (refreshed); throws RebuildLockedError when taken. */
async function withRebuildLock<T>(deps: ReplayDeps, lockMs: number, work: () => Promise<T>): Promise<T> {
  const lockKey = rebuildLockKey(deps.prefix);
  const token = randomUUID();
  if ((await deps.redis.set(lockKey, token, "PX", lockMs, "NX")) !== "OK") {
    throw new RebuildLockedError(lockKey);
  }
  const refresh = setInterval(() => void deps.redis.pexpire(lockKey, lockMs).catch(() => undefined), lockMs / 3);
  try {
    return await work();
  } finally {
    clearInterval(refresh);
    await RELEASE_LOCK.run(deps.redis, [lockKey], [token]).catch(() => undefined);
  }
}

/** Builds a fresh namespace and switches to it; a namespace flushed mid-build is deleted, not switched to. */
async function buildAndSwitch(deps: ReplayDeps): Promise<BuildResult & { oldNs: string | null }> {
  const ns = newNamespaceId();
  deps.logger.info({ evt: "store_rebuild_started", ns }, "rebuild started");
  const built = await buildNamespace(deps, ns, { shared: true });
  let oldNs: string | null;
  try {
    oldNs = await createNamespaceControl(deps.redis, deps.prefix).switchTo(
      ns,
      built.lastSeqs.map((seq) => seq + 1),
    );
  } catch (err) {
    if (err instanceof NamespaceLostError) await deleteNamespace(deps.redis, deps.prefix, ns).catch(() => undefined);
    throw err;
  }
  deps.logger.info(
    { evt: "store_rebuild_switched", ns, oldNs, lastSeqs: built.lastSeqs, events: built.events },
    "switched to the rebuilt namespace",
  );
  return { ...built, oldNs };
}

/**
 * `rebuild`: replays the stream into a fresh namespace while queries keep reading the active one,
 * then switches the control record to it with `startSeq = lastSeq + 1`. Every projector notices the
 * switch before its next batch and moves its durable consumer back to `startSeq`, so the events it
 * applied to the old namespace after `lastSeq` are delivered again into the new one. After
 * `graceMs` (queries in flight finish) the old namespace is deleted unless `keepOld`.
 */
export async function rebuild(
  deps: ReplayDeps,
  opts: { graceMs?: number; keepOld?: boolean } = {},
): Promise<RebuildResult> {
  return withRebuildLock(deps, 60_000, async () => {
    const built = await buildAndSwitch(deps);
    const { ns, oldNs } = built;
    let deletedKeys = 0;
    if (oldNs && oldNs !== ns && !opts.keepOld) {
      await new Promise((r) => setTimeout(r, opts.graceMs ?? 10_000));
      deletedKeys = await deleteNamespace(deps.redis, deps.prefix, oldNs);
    }
    return { ns, oldNs, lastSeq: built.lastSeq, events: built.events, ms: built.ms, deletedKeys };
  });
}

/**
 * Builds and activates a namespace only if none is active (Redis lost its data, or a fresh store),
 * checked under the rebuild lock so two healers never build one after the other. Resolves null when
 * a namespace was active; throws RebuildLockedError while another rebuild runs.
 */
export async function buildIfMissing(deps: ReplayDeps, lockMs: number): Promise<BuildResult | null> {
  return withRebuildLock(deps, lockMs, async () => {
    if (await createNamespaceControl(deps.redis, deps.prefix).peek()) return null;
    return buildAndSwitch(deps);
  });
}

/** Deletes every key of a namespace (SCAN on every master + UNLINK) and its birth marker; returns how many. */
export async function deleteNamespace(redis: RedisClient, prefix: string, ns: string): Promise<number> {
  let deleted = 0;
  await scanKeys(redis, namespacePattern(prefix, ns), async (node, keys) => {
    deleted += await unlinkOn(node, keys);
  });
  return deleted + (await redis.unlink(bornKey(prefix, ns)));
}
