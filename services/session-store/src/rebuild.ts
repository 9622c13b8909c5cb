import { randomUUID } from "node:crypto";
import type { Logger } from "@fleet/runtime";
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { Redis } from "ioredis";
import { appliedKey, namespacePattern, rebuildLockKey } from "./keys.js";
import { luaScript } from "./lua-scripts.js";
import { createNamespaceControl, newNamespaceId } from "./namespace.js";
import { createProjector, type Projector } from "./projector.js";
import { replayStream, streamGapReader, streamLastSeq } from "./replay.js";
import { createSessionCache } from "./session-cache.js";
import { createSessionRepo } from "./session-repo.js";

export interface ReplayDeps {
  js: JetStreamClient;
  jsm: JetStreamManager;
  redis: Redis;
  prefix: string;
  partitions: number;
  logger: Logger;
  cacheEntries?: number;
  maxBatch?: number;
}

export interface BuildResult {
  ns: string;
  /** Every event with seq <= lastSeq is in the namespace. */
  lastSeq: number;
  events: number;
  ms: number;
  projector: Projector;
}

/**
 * Replays the whole stream into namespace `ns` (fresh), catching up with the stream until the
 * remaining tail is small, and records `lastSeq` as every partition's applied position.
 */
export async function buildNamespace(deps: ReplayDeps, ns: string): Promise<BuildResult> {
  const started = performance.now();
  const repo = createSessionRepo(deps.redis, deps.prefix);
  const projector = createProjector({
    repo,
    cache: createSessionCache(deps.cacheEntries ?? 2_000_000),
    partitions: deps.partitions,
    readGap: streamGapReader(deps.js, deps.jsm),
    onInvalid: (record, error) =>
      deps.logger.warn(
        { evt: "store_invalid_event", seq: record.seq, subject: record.subject, error },
        "invalid event",
      ),
  });
  let last = 0;
  let events = 0;
  let lastLog = 0;
  for (let round = 0; round < 10; round++) {
    const target = await streamLastSeq(deps.jsm);
    if (target <= last) break;
    const tail = target - last;
    last = await replayStream({
      js: deps.js,
      projector,
      ns,
      fromSeq: last + 1,
      toSeq: target,
      ...(deps.maxBatch ? { maxBatch: deps.maxBatch } : {}),
      onBatch: (seq, size) => {
        events += size;
        if (performance.now() - lastLog > 2_000) {
          lastLog = performance.now();
          deps.logger.info({ evt: "store_replay_progress", ns, seq, target, events }, "replaying");
        }
      },
    });
    // Stop catching up once the tail left is small: the projectors deliver the rest from startSeq.
    if (tail < 1_000 && round > 0) break;
  }
  if (last > 0) {
    const fields: string[] = [];
    for (let p = 0; p < deps.partitions; p++) fields.push(String(p), String(last));
    await deps.redis.hset(appliedKey(deps.prefix, ns), ...fields);
  }
  return { ns, lastSeq: last, events, ms: performance.now() - started, projector };
}

export interface RebuildResult {
  ns: string;
  oldNs: string | null;
  lastSeq: number;
  events: number;
  ms: number;
  deletedKeys: number;
}

const RELEASE_LOCK = luaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`);

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
  const lockKey = rebuildLockKey(deps.prefix);
  const token = randomUUID();
  const lockMs = 60_000;
  if ((await deps.redis.set(lockKey, token, "PX", lockMs, "NX")) !== "OK") {
    throw new Error(`another rebuild holds ${lockKey}`);
  }
  const refresh = setInterval(() => void deps.redis.pexpire(lockKey, lockMs).catch(() => undefined), lockMs / 3);
  try {
    const ns = newNamespaceId();
    deps.logger.info({ evt: "store_rebuild_started", ns }, "rebuild started");
    const built = await buildNamespace(deps, ns);
    const oldNs = await createNamespaceControl(deps.redis, deps.prefix).switchTo(ns, built.lastSeq + 1);
    deps.logger.info(
      { evt: "store_rebuild_switched", ns, oldNs, lastSeq: built.lastSeq, events: built.events },
      "switched to the rebuilt namespace",
    );
    let deletedKeys = 0;
    if (oldNs && oldNs !== ns && !opts.keepOld) {
      await new Promise((r) => setTimeout(r, opts.graceMs ?? 10_000));
      deletedKeys = await deleteNamespace(deps.redis, deps.prefix, oldNs);
    }
    return { ns, oldNs, lastSeq: built.lastSeq, events: built.events, ms: built.ms, deletedKeys };
  } finally {
    clearInterval(refresh);
    await RELEASE_LOCK.run(deps.redis, [lockKey], [token]).catch(() => undefined);
  }
}

/** Deletes every key of a namespace (SCAN + UNLINK); returns how many. */
export async function deleteNamespace(redis: Redis, prefix: string, ns: string): Promise<number> {
  let cursor = "0";
  let deleted = 0;
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", namespacePattern(prefix, ns), "COUNT", 1000);
    cursor = next;
    if (keys.length > 0) deleted += await redis.unlink(...keys);
  } while (cursor !== "0");
  return deleted;
}
