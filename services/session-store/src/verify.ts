import { isSessionId, partitionOf, subjects } from "@fleet/protocol";
import { ALL_SHARDS, indexKeys, indexKeysOf, namespaceBase, sessionKeys, sessionKeysPattern } from "./keys.js";
import { luaScript } from "./lua-scripts.js";
import { createNamespaceControl, newNamespaceId } from "./namespace.js";
import { buildNamespace, deleteNamespace, type ReplayDeps } from "./rebuild.js";
import { type RedisClient, scanKeys } from "./redis-client.js";
import { streamGapReader } from "./replay.js";
import { sessionOfMember } from "./search-terms.js";
import { pairsToRecord } from "./session-repo.js";

/** Every stored value of one session, as raw strings: what verify compares. */
export interface SessionSnapshot {
  meta: Record<string, string>;
  entries: string[];
  pos: Record<string, string>;
  labels: Record<string, string>;
  leafEvents: string[];
  indexScore: string | null;
  approvals: Record<string, string>;
  /** The session's `terms` set, sorted. */
  terms: string[];
  /** Its entries in the indexes of change 44: `running` and `approvals` scores, `search` (its terms there). */
  indexes: Record<string, string>;
}

const SNAPSHOT_SCRIPT = luaScript(`
return {
  redis.call('HGETALL', KEYS[1]),
  redis.call('LRANGE', KEYS[2], 0, -1),
  redis.call('HGETALL', KEYS[3]),
  redis.call('HGETALL', KEYS[4]),
  redis.call('LRANGE', KEYS[5], 0, -1),
  redis.call('HGETALL', KEYS[6]),
  redis.call('SMEMBERS', KEYS[7])
}
`);

export async function snapshotSession(
  redis: RedisClient,
  prefix: string,
  ns: string,
  sessionId: string,
): Promise<SessionSnapshot | null> {
  const k = sessionKeys(prefix, ns, sessionId);
  const reply = (await SNAPSHOT_SCRIPT.run(
    redis,
    [k.meta, k.entries, k.pos, k.labels, k.leafEvents, k.approvals, k.terms],
    [],
  )) as string[][];
  const indexScore = await redis.zscore(indexKeysOf(prefix, ns, sessionId).sessions, sessionId);
  const [meta, entries, pos, labels, leafEvents, approvals, terms] = reply;
  const indexes = await indexEntriesOf(redis, prefix, ns, sessionId, terms ?? []);
  const empty = (x: unknown[] | undefined) => (x ?? []).length === 0;
  if (empty(meta) && empty(entries) && indexScore === null && Object.keys(indexes).length === 0) return null;
  return {
    meta: pairsToRecord(meta ?? []),
    entries: entries ?? [],
    pos: pairsToRecord(pos ?? []),
    labels: pairsToRecord(labels ?? []),
    leafEvents: leafEvents ?? [],
    indexScore,
    approvals: pairsToRecord(approvals ?? []),
    terms: [...(terms ?? [])].sort(),
    indexes,
  };
}

async function indexEntriesOf(
  redis: RedisClient,
  prefix: string,
  ns: string,
  sessionId: string,
  terms: readonly string[],
): Promise<Record<string, string>> {
  const keys = indexKeysOf(prefix, ns, sessionId);
  const out: Record<string, string> = {};
  const running = await redis.zscore(keys.running, sessionId);
  const approvals = await redis.zscore(keys.approvals, sessionId);
  if (running !== null) out.running = running;
  if (approvals !== null) out.approvals = approvals;
  if (terms.length > 0) {
    const scores = await redis.zmscore(keys.search, ...terms);
    out.search = JSON.stringify(terms.filter((_, i) => scores[i] !== null).sort());
  }
  return out;
}

/**
 * Index entries of a namespace whose session does not hold them: a search member missing from its
 * session's `terms`, a running or approvals entry of a session without keys. One line each.
 */
export async function orphanIndexEntries(redis: RedisClient, prefix: string, ns: string): Promise<string[]> {
  const out: string[] = [];
  for (const shard of ALL_SHARDS) {
    const keys = indexKeys(prefix, ns, shard);
    for (const member of await redis.zrange(keys.search, 0, -1)) {
      const sid = sessionOfMember(member);
      if (sid === null || (await redis.sismember(sessionKeys(prefix, ns, sid).terms, member)) === 0) {
        out.push(`search index: ${show(member)} is not a term of ${sid ?? "any session"}`);
      }
    }
    for (const [what, key] of [
      ["running", keys.running],
      ["approvals", keys.approvals],
    ] as const) {
      for (const sid of await redis.zrange(key, 0, -1)) {
        if ((await redis.exists(sessionKeys(prefix, ns, sid).meta)) === 0)
          out.push(`${what} index: ${sid} has no session`);
      }
    }
  }
  return out;
}

/**
 * Counters of the agents index that differ from the versions the namespace's sessions run (their
 * meta `agent` fields), one line each.
 */
export async function agentCounterDrift(redis: RedisClient, prefix: string, ns: string): Promise<string[]> {
  const tally = new Map<string, number>();
  for (const sid of await sessionIdsOf(redis, prefix, ns)) {
    const agent = await redis.hget(sessionKeys(prefix, ns, sid).meta, "agent");
    if (agent) tally.set(agent, (tally.get(agent) ?? 0) + 1);
  }
  const stored = new Map<string, number>();
  for (const shard of ALL_SHARDS) {
    for (const [ref, n] of Object.entries(await redis.hgetall(indexKeys(prefix, ns, shard).agents)))
      stored.set(ref, (stored.get(ref) ?? 0) + Number(n));
  }
  const out: string[] = [];
  for (const ref of new Set([...tally.keys(), ...stored.keys()])) {
    const want = tally.get(ref) ?? 0;
    const got = stored.get(ref) ?? 0;
    if (want !== got) out.push(`agents index: ${show(ref)} counts ${got} sessions, the sessions say ${want}`);
  }
  return out;
}

/** Session ids present in a namespace: from its meta keys (every master) and from its index. */
export async function sessionIdsOf(redis: RedisClient, prefix: string, ns: string): Promise<Set<string>> {
  const ids = new Set<string>();
  for (const shard of ALL_SHARDS)
    for (const id of await redis.zrange(indexKeys(prefix, ns, shard).sessions, 0, -1)) ids.add(id);
  // `<base>:{s<k>}:s:<sid>:<field>`; session ids hold no `:`.
  const sessionKey = /^\{s\d+\}:s:([^:]+):[a-z]+$/;
  const from = namespaceBase(prefix, ns).length + 1;
  await scanKeys(redis, sessionKeysPattern(prefix, ns), (_node, keys) => {
    for (const key of keys) {
      const m = sessionKey.exec(key.slice(from));
      if (m) ids.add(m[1] as string);
    }
  });
  return ids;
}

const show = (v: unknown) => {
  const s = v === undefined || v === null ? "(absent)" : typeof v === "string" ? v : JSON.stringify(v);
  return s.length > 300 ? `${s.slice(0, 300)}…(${s.length} chars)` : s;
};

/** Every difference between the live and the rebuilt snapshot of one session, one line each. */
export function diffSnapshots(
  sessionId: string,
  live: SessionSnapshot | null,
  rebuilt: SessionSnapshot | null,
): string[] {
  if (!live && !rebuilt) return [];
  if (!live) return [`${sessionId}: missing in the live projection (rebuilt lastSeq ${rebuilt?.meta.lastSeq})`];
  if (!rebuilt)
    return [`${sessionId}: in the live projection but not in the stream (live lastSeq ${live.meta.lastSeq})`];
  const out: string[] = [];
  const record = (what: string, a: Record<string, string>, b: Record<string, string>) => {
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const x = Object.hasOwn(a, key) ? a[key] : undefined;
      const y = Object.hasOwn(b, key) ? b[key] : undefined;
      if (x !== y) out.push(`${sessionId}: ${what}[${key}]: live ${show(x)} != rebuilt ${show(y)}`);
    }
  };
  const list = (what: string, a: string[], b: string[]) => {
    if (a.length !== b.length) out.push(`${sessionId}: ${what} length: live ${a.length} != rebuilt ${b.length}`);
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      if (a[i] !== b[i]) out.push(`${sessionId}: ${what}[${i}]: live ${show(a[i])} != rebuilt ${show(b[i])}`);
    }
  };
  record("meta", live.meta, rebuilt.meta);
  list("entries", live.entries, rebuilt.entries);
  record("pos", live.pos, rebuilt.pos);
  record("labels", live.labels, rebuilt.labels);
  list("leafEvents", live.leafEvents, rebuilt.leafEvents);
  record("approvals", live.approvals, rebuilt.approvals);
  list("terms", live.terms, rebuilt.terms);
  record("indexes", live.indexes, rebuilt.indexes);
  if (live.indexScore !== rebuilt.indexScore) {
    out.push(`${sessionId}: index score: live ${show(live.indexScore)} != rebuilt ${show(rebuilt.indexScore)}`);
  }
  return out;
}

export interface VerifyResult {
  liveNs: string | null;
  scratchNs: string;
  lastSeq: number;
  sessions: number;
  differences: string[];
}

/**
 * `verify`: replays the stream into a scratch namespace and compares every session with the live
 * projection. The live projection keeps moving meanwhile, so a session is compared at the same
 * lastSeq: when live is ahead the scratch copy is advanced from the stream to live's lastSeq; when
 * live is behind, verify waits up to `waitMs` for it, then reports the lag as a difference.
 */
export async function verify(deps: ReplayDeps, opts: { waitMs?: number } = {}): Promise<VerifyResult> {
  const active = await createNamespaceControl(deps.redis, deps.prefix).peek();
  const scratchNs = `verify-${newNamespaceId()}`;
  const built = await buildNamespace(deps, scratchNs);
  const readGap = streamGapReader(deps.js, deps.jsm, deps.groups);
  const differences: string[] = [];
  try {
    if (!active) differences.push("no live projection: the store control record is missing");
    const liveNs = active?.ns;
    const ids = await sessionIdsOf(deps.redis, deps.prefix, scratchNs);
    if (liveNs) for (const id of await sessionIdsOf(deps.redis, deps.prefix, liveNs)) ids.add(id);

    // One waiting budget for the whole run: a live projection that is behind catches up once.
    const deadline = Date.now() + (opts.waitMs ?? 10_000);
    for (const sessionId of [...ids].sort()) {
      let live: SessionSnapshot | null = null;
      let rebuilt: SessionSnapshot | null = null;
      for (;;) {
        live = liveNs ? await snapshotSession(deps.redis, deps.prefix, liveNs, sessionId) : null;
        rebuilt = await snapshotSession(deps.redis, deps.prefix, scratchNs, sessionId);
        const liveSeq = Number(live?.meta.lastSeq ?? 0);
        const rebuiltSeq = Number(rebuilt?.meta.lastSeq ?? 0);
        if (liveSeq > rebuiltSeq && isSessionId(sessionId)) {
          const subject = subjects.event(partitionOf(sessionId, deps.partitions), sessionId);
          const records = await readGap(subject, rebuiltSeq + 1, liveSeq);
          if (records.length === 0) break;
          await built.projector.applyBatch(scratchNs, records);
          continue;
        }
        if (liveSeq < rebuiltSeq && liveNs && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 100));
          continue;
        }
        break;
      }
      differences.push(...diffSnapshots(sessionId, live, rebuilt));
    }
    if (liveNs) {
      differences.push(...(await orphanIndexEntries(deps.redis, deps.prefix, liveNs)));
      differences.push(...(await agentCounterDrift(deps.redis, deps.prefix, liveNs)));
    }
    return { liveNs: liveNs ?? null, scratchNs, lastSeq: built.lastSeq, sessions: ids.size, differences };
  } finally {
    await deleteNamespace(deps.redis, deps.prefix, scratchNs);
  }
}
