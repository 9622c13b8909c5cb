import { appliedKey, indexKeys, indexKeysOf, type SessionKeys, sessionKeyBase, sessionKeys } from "./keys.js";
import { APPLY_SHARD_SCRIPT, RAISE_SCRIPT, READ_SCRIPT, REMOVE_SCRIPT } from "./lua-scripts.js";
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

/** A session's entry in its shard's sessions index (scored by updatedAt). */
export interface SessionTouch {
  sessionId: string;
  updatedAt: number;
}

/** One session's write: its plan and the updatedAt its sessions index entry is raised to. */
export interface SessionWrite extends SessionTouch {
  plan: WritePlan;
}

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
  /**
   * Writes the plans of sessions of shard `shard` (each atomic and lastSeq-guarded, with its index
   * entries) and raises the sessions index entries of `touches` (idempotent and monotonic, so it may
   * run again after a redelivery), in one call. Results are in `writes` order.
   */
  writeShard(
    ns: string,
    shard: number,
    touches: readonly SessionTouch[],
    writes: readonly SessionWrite[],
  ): Promise<WriteResult[]>;
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
    async writeShard(ns, shard, touches, writes) {
      const args: Array<string | number> = [sessionKeyBase(prefix, ns, shard), touches.length];
      for (const t of touches) args.push(t.updatedAt, t.sessionId);
      args.push(writes.length);
      for (const w of writes) {
        const at = args.length;
        args.push(0, w.sessionId, w.updatedAt);
        pushPlan(args, w.plan);
        args[at] = args.length - at - 1;
      }
      const idx = indexKeys(prefix, ns, shard);
      const reply = await APPLY_SHARD_SCRIPT.run(
        redis,
        [idx.sessions, idx.running, idx.approvals, idx.search, idx.agents],
        args,
      );
      if (!Array.isArray(reply) || reply.length !== writes.length) {
        throw new Error(`shard ${shard}: unexpected apply reply`);
      }
      return reply.map((r) => {
        const result = Number(r);
        return result === -1 ? { applied: true } : { applied: false, storedLastSeq: result };
      });
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

/** A plan's arguments in the order APPLY_SHARD_SCRIPT reads them (after sessionId and updatedAt). */
function pushPlan(args: Array<string | number>, plan: WritePlan) {
  args.push(plan.expectedLastSeq, plan.firstIndex);
  pushPairs(args, plan.meta);
  args.push(plan.entries.length);
  for (const e of plan.entries) args.push(e.id, e.json);
  pushPairs(args, plan.labelSet);
  pushCounted(args, plan.labelDel);
  pushCounted(args, plan.leafEvents);
  pushPairs(args, plan.approvalSet);
  pushCounted(args, plan.approvalDel);
  pushCounted(args, plan.termAdd);
  pushCounted(args, plan.termDel);
  args.push(plan.running ? "1" : "0", plan.oldestApproval === null ? "" : plan.oldestApproval);
  args.push(plan.agentBefore, plan.agentAfter);
}

/** `n, a1, b1, … an, bn`: a count of pairs, then the pairs. */
function pushPairs(args: Array<string | number>, pairs: ReadonlyArray<readonly [string, string]>) {
  args.push(pairs.length);
  for (const [a, b] of pairs) args.push(a, b);
}

/** `n, x1 … xn`: a count, then the items. */
function pushCounted(args: Array<string | number>, items: readonly string[]) {
  args.push(items.length);
  for (const x of items) args.push(x);
}

/** A session's own keys in the order the remove script takes them. */
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
