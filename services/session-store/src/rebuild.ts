import { randomUUID } from "node:crypto";
import { eventStreamName, partitionsOfGroup } from "@fleet/protocol";
import type { Logger } from "@fleet/runtime";
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { appliedKey, bornKey, namespacePattern, rebuildLockKey } from "./keys.js";
import { luaScript } from "./lua-scripts.js";
import { createNamespaceControl, NamespaceLostError, newNamespaceId } from "./namespace.js";
import { createProjector, type Projector } from "./projector.js";
import { type RedisClient, scanKeys, unlinkOn } from "./redis-client.js";
import { replayStream, streamGapReader, streamLastSeq } from "./replay.js";
import { createSessionCache } from "./session-cache.js";
import { createSessionRepo } from "./session-repo.js";

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
  events: number;
  ms: number;
  projector: Projector;
}

/**
 * Replays every group's stream into namespace `ns` (fresh), the K groups concurrently, each catching
 * up with its stream until the remaining tail is small, and records its group's `lastSeq` as every
 * partition's applied position.
 */
export async function buildNamespace(deps: ReplayDeps, ns: string): Promise<BuildResult> {
  const started = performance.now();
  const repo = createSessionRepo(deps.redis, deps.prefix);
  const projector = createProjector({
    repo,
    cache: createSessionCache(deps.cacheEntries ?? 2_000_000),
    partitions: deps.partitions,
    readGap: streamGapReader(deps.js, deps.jsm, deps.groups),
    onInvalid: (record, error) =>
      deps.logger.warn(
        { evt: "store_invalid_event", seq: record.seq, subject: record.subject, error },
        "invalid event",
      ),
  });
  await createNamespaceControl(deps.redis, deps.prefix).markBorn(ns);
  let events = 0;
  const topo = { partitions: deps.partitions, groups: deps.groups };
  // The groups' streams hold disjoint sessions: they replay at once, each on its own ordered consumer.
  const lastSeqs = await Promise.all(
    Array.from({ length: deps.groups }, async (_, group) => {
      const stream = eventStreamName(group, deps.groups);
      const replayed = await replayGroup(deps, projector, ns, stream, (size) => {
        events += size;
      });
      if (replayed > 0) {
        const fields: string[] = [];
        for (const p of partitionsOfGroup(group, topo)) fields.push(String(p), String(replayed));
        await deps.redis.hset(appliedKey(deps.prefix, ns), ...fields);
      }
      return replayed;
    }),
  );
  return { ns, lastSeqs, lastSeq: lastSeqs[0] ?? 0, events, ms: performance.now() - started, projector };
}

/** Replays one group's stream into `ns` until its remaining tail is small; returns its last applied seq. */
async function replayGroup(
  deps: ReplayDeps,
  projector: Projector,
  ns: string,
  stream: string,
  onEvents: (size: number) => void,
): Promise<number> {
  let last = 0;
  let events = 0;
  let lastLog = 0;
  for (let round = 0; round < 10; round++) {
    const target = await streamLastSeq(deps.jsm, stream);
    if (target <= last) break;
    const tail = target - last;
    last = await replayStream({
      js: deps.js,
      stream,
      projector,
      ns,
      fromSeq: last + 1,
      toSeq: target,
      ...(deps.maxBatch ? { maxBatch: deps.maxBatch } : {}),
      onBatch: (seq, size) => {
        events += size;
        onEvents(size);
        if (performance.now() - lastLog > 2_000) {
          lastLog = performance.now();
          deps.logger.info({ evt: "store_replay_progress", ns, stream, seq, target, events }, "replaying");
        }
      },
    });
    // Stop catching up once the tail left is small: the projectors deliver the rest from startSeq.
    if (tail < 1_000 && round > 0) break;
  }
  return last;
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

const RELEASE_LOCK = luaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`);

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
  const built = await buildNamespace(deps, ns);
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
