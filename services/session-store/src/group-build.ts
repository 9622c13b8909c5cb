/**
 * A rebuild shared by the store instances: the K stream groups of a namespace being built are offered
 * to every instance, and each replays one group at a time under the group's build lease, so K groups
 * rebuild on K instances at once (the projection is CPU-bound in one process).
 *
 * - `<prefix>:build` (hash): `ns` = the namespace being built. Written by the builder (the holder of
 *   the rebuild lock) before it takes its first group, removed when every group is in.
 * - `<prefix>:lock:rebuild:g<g>` (string, PX): group g's build lease, held while one instance replays
 *   it, refreshed every third of its TTL. A holder that dies lets it expire and another one replays
 *   the group again (the lastSeq guards make the repeat a no-op).
 * - `<prefix>:<ns>:built` (hash): `g<g>` → the last sequence of group g's stream replayed into `ns`.
 */
import { randomUUID } from "node:crypto";
import { eventStreamName, partitionsOfGroup } from "@fleet/protocol";
import { appliedKey, bornKey, buildKey, builtKey, groupBuildLockKey } from "./keys.js";
import { luaScript, RELEASE_LOCK } from "./lua-scripts.js";
import { NamespaceLostError } from "./namespace.js";
import { createProjector, type Projector } from "./projector.js";
import type { ReplayDeps } from "./rebuild.js";
import { replayStream, streamGapReader, streamLastSeq } from "./replay.js";
import { createSessionCache } from "./session-cache.js";
import { createSessionRepo } from "./session-repo.js";

const GROUP_LEASE_MS = 10_000;

/** Clears the build record if it still names ARGV[1]. */
const CLEAR_BUILD = luaScript(`
if redis.call('HGET', KEYS[1], 'ns') == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`);

/** A projector for replays (its own cache), logging invalid events. */
export function replayProjector(deps: ReplayDeps): Projector {
  return createProjector({
    repo: createSessionRepo(deps.redis, deps.prefix),
    cache: createSessionCache(deps.cacheEntries ?? 2_000_000),
    partitions: deps.partitions,
    readGap: streamGapReader(deps.js, deps.jsm, deps.groups),
    onInvalid: (record, error) =>
      deps.logger.warn(
        { evt: "store_invalid_event", seq: record.seq, subject: record.subject, error },
        "invalid event",
      ),
  });
}

/** Replays group `group`'s stream into `ns` and records it as every partition's applied position. */
export async function replayGroupInto(
  deps: ReplayDeps,
  projector: Projector,
  ns: string,
  group: number,
  onEvents: (size: number) => void,
): Promise<number> {
  const replayed = await replayStreamTail(deps, projector, ns, eventStreamName(group, deps.groups), onEvents);
  if (replayed > 0) {
    const fields: string[] = [];
    for (const p of partitionsOfGroup(group, { partitions: deps.partitions, groups: deps.groups }))
      fields.push(String(p), String(replayed));
    await deps.redis.hset(appliedKey(deps.prefix, ns), ...fields);
  }
  return replayed;
}

/**
 * Takes one group of `ns` that is neither built nor leased, replays it and records it. Resolves true
 * when it replayed one, false when none was open.
 */
async function takeOpenGroup(
  deps: ReplayDeps,
  ns: string,
  projector: Projector,
  onEvents: (size: number) => void,
): Promise<boolean> {
  const built = await deps.redis.hgetall(builtKey(deps.prefix, ns));
  const offset = Math.floor(Math.random() * deps.groups);
  for (let i = 0; i < deps.groups; i++) {
    const group = (offset + i) % deps.groups;
    if (built[`g${group}`] !== undefined) continue;
    const lock = groupBuildLockKey(deps.prefix, group);
    const token = randomUUID();
    if ((await deps.redis.set(lock, token, "PX", GROUP_LEASE_MS, "NX")) !== "OK") continue;
    const refresh = setInterval(
      () => void deps.redis.pexpire(lock, GROUP_LEASE_MS).catch(() => undefined),
      GROUP_LEASE_MS / 3,
    );
    try {
      if ((await deps.redis.hexists(builtKey(deps.prefix, ns), `g${group}`)) === 1) return true;
      deps.logger.info({ evt: "store_rebuild_group_started", ns, group }, "replaying a stream group");
      const last = await replayGroupInto(deps, projector, ns, group, onEvents);
      await deps.redis.hset(builtKey(deps.prefix, ns), `g${group}`, String(last));
      deps.logger.info({ evt: "store_rebuild_group_done", ns, group, lastSeq: last }, "stream group replayed");
      return true;
    } finally {
      clearInterval(refresh);
      await RELEASE_LOCK.run(deps.redis, [lock], [token]).catch(() => undefined);
    }
  }
  return false;
}

/**
 * The builder's side: offers `ns`'s groups to every instance, replays groups itself one at a time
 * and waits until all K are in; returns each group's last replayed sequence. Throws
 * NamespaceLostError when the namespace's birth marker disappears meanwhile (Redis flushed).
 */
export async function buildShared(
  deps: ReplayDeps,
  ns: string,
  projector: Projector,
  onEvents: (size: number) => void,
): Promise<number[]> {
  await deps.redis.hset(buildKey(deps.prefix), "ns", ns);
  try {
    for (;;) {
      const took = await takeOpenGroup(deps, ns, projector, onEvents);
      const built = await deps.redis.hgetall(builtKey(deps.prefix, ns));
      const lastSeqs = Array.from({ length: deps.groups }, (_, g) => built[`g${g}`]);
      if (lastSeqs.every((seq) => seq !== undefined)) return lastSeqs.map(Number);
      if (!took) {
        if ((await deps.redis.exists(bornKey(deps.prefix, ns))) === 0) throw new NamespaceLostError(ns);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  } finally {
    await CLEAR_BUILD.run(deps.redis, [buildKey(deps.prefix)], [ns]).catch(() => undefined);
  }
}

/**
 * A helper's side, run by every store instance about once a second: while a build is offered, takes
 * its open groups one at a time. Resolves how many groups it replayed.
 */
export async function helpBuild(deps: ReplayDeps): Promise<number> {
  const ns = await deps.redis.hget(buildKey(deps.prefix), "ns");
  if (!ns || (await deps.redis.exists(bornKey(deps.prefix, ns))) === 0) return 0;
  const projector = replayProjector(deps);
  let groups = 0;
  while (await takeOpenGroup(deps, ns, projector, () => undefined)) groups++;
  return groups;
}

/** Replays one stream into `ns` until its remaining tail is small; returns its last applied seq. */
async function replayStreamTail(
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
