import { appliedKey, indexKeys, indexKeysOf, type SessionKeys, sessionKeys, shardOf } from "./keys.js";
import { APPLY_SCRIPT, RAISE_SCRIPT, READ_SCRIPT, REMOVE_SCRIPT } from "./lua-scripts.js";
import type { RedisClient } from "./redis-client.js";
import { decodeSession, type RawSession, type WritePlan } from "./session-codec.js";
import type { ProjectedSession } from "./session-state.js";

export type LoadResult =
  | { kind: "missing" }
  /** Stored lastSeq equals the `known` session's: the caller's copy is current. */
  | { kind: "same" }
  | { kind: "ok"; session: ProjectedSession }
  | { kind: "corrupt"; error: string };

export type WriteResult = { applied: true } | { applied: false; storedLastSeq: number };

/** Redis access for sessions of one key prefix; every call names its namespace. */
export interface SessionRepo {
  readonly redis: RedisClient;
  readonly prefix: string;
  /**
   * Reads a session. With `known` (the same session, same namespace, earlier or equal lastSeq) only
   * what was appended since is transferred; if the stored session is not an extension of `known`
   * (flushed, rewritten, corrupted) it is read in full.
   */
  load(ns: string, sessionId: string, known?: ProjectedSession): Promise<LoadResult>;
  write(ns: string, sessionId: string, plan: WritePlan): Promise<WriteResult>;
  /**
   * Index entries of sessions (one ZADD GT per shard): idempotent and monotonic, so it may run after
   * the sessions' writes and again after a redelivery.
   */
  touchIndex(ns: string, sessions: ReadonlyArray<{ sessionId: string; updatedAt: number }>): Promise<void>;
  markApplied(ns: string, partition: number, seq: number): Promise<void>;
  /** Removes a session's keys and its entries in every index, atomically (idempotent). */
  remove(ns: string, sessionId: string): Promise<void>;
  applied(ns: string, partition: number): Promise<number>;
}

interface RawRead extends RawSession {
  entryCount: number;
  leafEventCount: number;
}

export function createSessionRepo(redis: RedisClient, prefix: string): SessionRepo {
  async function loadOnce(ns: string, sessionId: string, known?: ProjectedSession): Promise<LoadResult | "reload"> {
    const keys = sessionKeys(prefix, ns, sessionId);
    const reply = await READ_SCRIPT.run(
      redis,
      [keys.meta, keys.entries, keys.labels, keys.leafEvents, keys.approvals],
      [known ? known.tree.entries.length : 0, known ? known.tree.leafEventIds.length : 0, known ? known.lastSeq : -1],
    );
    if (reply === null) return { kind: "missing" };
    if (reply === 1) return { kind: "same" };
    const raw = parseReadReply(reply);
    if (!raw) return { kind: "corrupt", error: `session ${sessionId}: unexpected read reply` };
    if (
      known &&
      (!(Number(raw.meta.lastSeq) > known.lastSeq) ||
        raw.entryCount < known.tree.entries.length ||
        raw.leafEventCount < known.tree.leafEventIds.length)
    ) {
      return "reload";
    }
    const decoded = decodeSession(sessionId, raw, known);
    return decoded.ok ? { kind: "ok", session: decoded.session } : { kind: "corrupt", error: decoded.error };
  }

  return {
    redis,
    prefix,
    async load(ns, sessionId, known) {
      const result = await loadOnce(ns, sessionId, known);
      if (result !== "reload") return result;
      return (await loadOnce(ns, sessionId)) as LoadResult;
    },
    async write(ns, sessionId, plan) {
      const keys = sessionKeys(prefix, ns, sessionId);
      const args: Array<string | number> = [plan.expectedLastSeq, plan.firstIndex, plan.meta.length];
      for (const [f, v] of plan.meta) args.push(f, v);
      args.push(plan.entries.length);
      for (const e of plan.entries) args.push(e.id, e.json);
      args.push(plan.labelSet.length);
      for (const [t, l] of plan.labelSet) args.push(t, l);
      args.push(plan.labelDel.length, ...plan.labelDel);
      args.push(plan.leafEvents.length, ...plan.leafEvents);
      args.push(plan.approvalSet.length);
      for (const [id, json] of plan.approvalSet) args.push(id, json);
      args.push(plan.approvalDel.length, ...plan.approvalDel);
      args.push(plan.termAdd.length, ...plan.termAdd, plan.termDel.length, ...plan.termDel);
      args.push(sessionId, plan.running ? "1" : "0", plan.oldestApproval === null ? "" : plan.oldestApproval);
      args.push(plan.agentBefore, plan.agentAfter);
      const idx = indexKeysOf(prefix, ns, sessionId);
      const result = Number(
        await APPLY_SCRIPT.run(redis, [...ownKeys(keys), idx.running, idx.approvals, idx.search, idx.agents], args),
      );
      return result === -1 ? { applied: true } : { applied: false, storedLastSeq: result };
    },
    async touchIndex(ns, sessions) {
      if (sessions.length === 0) return;
      const byShard = new Map<number, Array<string | number>>();
      for (const s of sessions) {
        const shard = shardOf(s.sessionId);
        const args = byShard.get(shard) ?? [];
        if (args.length === 0) byShard.set(shard, args);
        args.push(s.updatedAt, s.sessionId);
      }
      await Promise.all(
        [...byShard].map(([shard, args]) => redis.zadd(indexKeys(prefix, ns, shard).sessions, "GT", ...args)),
      );
    },
    async remove(ns, sessionId) {
      const keys = sessionKeys(prefix, ns, sessionId);
      const idx = indexKeysOf(prefix, ns, sessionId);
      await REMOVE_SCRIPT.run(
        redis,
        [...ownKeys(keys), idx.sessions, idx.running, idx.approvals, idx.search, idx.agents],
        [sessionId],
      );
    },
    async markApplied(ns, partition, seq) {
      await RAISE_SCRIPT.run(redis, [appliedKey(prefix, ns)], [String(partition), seq]);
    },
    async applied(ns, partition) {
      return Number((await redis.hget(appliedKey(prefix, ns), String(partition))) ?? 0);
    },
  };
}

/** A session's own keys in the order the apply and remove scripts take them. */
const ownKeys = (k: SessionKeys) => [k.meta, k.entries, k.pos, k.labels, k.leafEvents, k.approvals, k.terms];

function parseReadReply(reply: unknown): RawRead | null {
  if (!Array.isArray(reply) || reply.length !== 7) return null;
  const [meta, entries, labels, leafEvents, entryCount, leafEventCount, approvals] = reply as unknown[];
  const strings = (x: unknown): x is string[] => Array.isArray(x) && x.every((s) => typeof s === "string");
  if (!strings(meta) || !strings(entries) || !strings(labels) || !strings(leafEvents)) return null;
  if (typeof entryCount !== "number" || typeof leafEventCount !== "number" || !strings(approvals)) return null;
  return {
    meta: pairsToRecord(meta),
    entries,
    labels: pairsToRecord(labels),
    leafEvents,
    entryCount,
    leafEventCount,
    approvals: pairsToRecord(approvals),
  };
}

export function pairsToRecord(pairs: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < pairs.length; i += 2) {
    Object.defineProperty(out, pairs[i] as string, {
      value: pairs[i + 1],
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}
