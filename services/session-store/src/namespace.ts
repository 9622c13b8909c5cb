import { randomBytes } from "node:crypto";
import { z } from "zod";
import { bornKey, controlKey, INDEX_VERSION, indexVersionKey, resetKey } from "./keys.js";
import { luaScript } from "./lua-scripts.js";
import type { RedisClient } from "./redis-client.js";

/**
 * The active key namespace. Projectors write into it and queries read from it. `startSeqs[g]` is
 * the first sequence of group g's stream that is not yet in it: group g's durable consumer must
 * deliver from there on into this namespace (see README "Rebuild and hand-over"). `startSeq` is
 * group 0's (the whole log's with K = 1).
 */
export interface ActiveNamespace {
  ns: string;
  startSeq: number;
  startSeqs: readonly number[];
}

/** Where group `g`'s consumer starts delivering into `active` (1 for a group it recorded nothing for). */
export const startSeqOfGroup = (active: ActiveNamespace, group: number): number => active.startSeqs[group] ?? 1;

const Seq = z
  .string()
  .regex(/^[1-9][0-9]*$/)
  .transform(Number);
const Control = z.object({
  ns: z.string().min(1),
  startSeq: Seq,
  /** Every group's start, comma-separated; absent in a record written before stream groups (K = 1). */
  startSeqs: z
    .string()
    .regex(/^[1-9][0-9]*(,[1-9][0-9]*)*$/)
    .transform((v) => v.split(",").map(Number))
    .nullable(),
});

/**
 * Sets the control record, only while the new namespace's birth marker (KEYS[2], in the control
 * key's slot) still exists: a
 * FLUSHALL during its build removed the marker, and a namespace missing part of its keys must never
 * become active. Returns {1, previous namespace or false}, or {0} when the marker is gone.
 */
const SWITCH_SCRIPT = luaScript(`
if redis.call('EXISTS', KEYS[2]) == 0 then return {0} end
local old = redis.call('HGET', KEYS[1], 'ns')
redis.call('HSET', KEYS[1], 'ns', ARGV[1], 'startSeq', ARGV[2], 'switchedAt', ARGV[3], 'startSeqs', ARGV[4])
return {1, old}
`);

export function newNamespaceId(now: number = Date.now()): string {
  return `n${now.toString(36)}${randomBytes(3).toString("hex")}`;
}

/** The switch was refused: Redis lost the namespace's keys (FLUSHALL, restart) while it was built. */
export class NamespaceLostError extends Error {
  constructor(ns: string) {
    super(`namespace ${ns} lost its keys while it was built (Redis flushed or restarted)`);
    this.name = "NamespaceLostError";
  }
}

export interface NamespaceControl {
  /**
   * The active namespace, or null when there is none: Redis lost its data (FLUSHALL, a restart
   * without persistence) or no namespace was ever built. Only a complete build creates one
   * (`switchTo`), so a reader never sees a half-filled namespace.
   */
  peek(): Promise<ActiveNamespace | null>;
  /** Writes `ns`'s birth marker; call before the first write into a namespace that `switchTo` will activate. */
  markBorn(ns: string): Promise<void>;
  /**
   * Makes `ns` active from `startSeq` (a list: group g's at index g; one number: group 0's, K = 1);
   * returns the namespace it replaced. Throws NamespaceLostError (and switches nothing) when `ns`'s
   * birth marker is gone.
   */
  switchTo(ns: string, startSeq: number | readonly number[]): Promise<string | null>;
  /** Whether group `g`'s consumer was moved to the namespace's start for `ns` already. */
  isReset(ns: string, group: number): Promise<boolean>;
  markReset(ns: string, group: number): Promise<void>;
}

export function createNamespaceControl(redis: RedisClient, prefix: string): NamespaceControl {
  const key = controlKey(prefix);
  const parse = (ns: unknown, startSeq: unknown, startSeqs: unknown): ActiveNamespace => {
    const checked = Control.safeParse({ ns, startSeq, startSeqs });
    if (!checked.success) throw new Error(`corrupt store control record ${key}: ${checked.error.message}`);
    const { startSeqs: list, ...rest } = checked.data;
    return { ...rest, startSeqs: list ?? [rest.startSeq] };
  };
  return {
    async peek() {
      const [ns, startSeq, startSeqs] = await redis.hmget(key, "ns", "startSeq", "startSeqs");
      return ns === null ? null : parse(ns, startSeq, startSeqs);
    },
    async markBorn(ns) {
      // A namespace is built from its first write with the indexes of this version (change 44).
      // Two slots in a cluster: two commands. The marker comes last, so a born namespace has its version.
      await redis.set(indexVersionKey(prefix, ns), INDEX_VERSION);
      await redis.set(bornKey(prefix, ns), String(Date.now()));
    },
    async switchTo(ns, startSeq) {
      const list = typeof startSeq === "number" ? [startSeq] : [...startSeq];
      const args = [ns, list[0] ?? 1, Date.now(), list.join(",")];
      const reply = await SWITCH_SCRIPT.run(redis, [key, bornKey(prefix, ns)], args);
      const [switched, old] = Array.isArray(reply) ? reply : [0];
      if (switched !== 1) throw new NamespaceLostError(ns);
      return typeof old === "string" ? old : null;
    },
    async isReset(ns, group) {
      return (await redis.hget(resetKey(prefix, ns), `g${group}`)) === "1";
    },
    async markReset(ns, group) {
      await redis.hset(resetKey(prefix, ns), `g${group}`, "1");
    },
  };
}
