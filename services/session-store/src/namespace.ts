import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import { z } from "zod";
import { bornKey, controlKey, INDEX_VERSION, indexVersionKey, resetKey } from "./keys.js";
import { luaScript } from "./lua-scripts.js";

/**
 * The active key namespace. Projectors write into it and queries read from it. `startSeq` is the
 * first stream sequence that is not yet in it: every durable consumer must deliver from there on
 * into this namespace (see README "Rebuild and hand-over").
 */
export interface ActiveNamespace {
  ns: string;
  startSeq: number;
}

const Control = z.object({
  ns: z.string().min(1),
  startSeq: z
    .string()
    .regex(/^[1-9][0-9]*$/)
    .transform(Number),
});

/**
 * Sets the control record, only while the new namespace's birth marker (KEYS[2]) still exists: a
 * FLUSHALL during its build removed the marker, and a namespace missing part of its keys must never
 * become active. Returns {1, previous namespace or false}, or {0} when the marker is gone.
 */
const SWITCH_SCRIPT = luaScript(`
if redis.call('EXISTS', KEYS[2]) == 0 then return {0} end
local old = redis.call('HGET', KEYS[1], 'ns')
redis.call('HSET', KEYS[1], 'ns', ARGV[1], 'startSeq', ARGV[2], 'switchedAt', ARGV[3])
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
   * Makes `ns` active from `startSeq`; returns the namespace it replaced. Throws NamespaceLostError
   * (and switches nothing) when `ns`'s birth marker is gone.
   */
  switchTo(ns: string, startSeq: number): Promise<string | null>;
  isReset(ns: string, partition: number): Promise<boolean>;
  markReset(ns: string, partition: number): Promise<void>;
}

export function createNamespaceControl(redis: Redis, prefix: string): NamespaceControl {
  const key = controlKey(prefix);
  const parse = (ns: unknown, startSeq: unknown): ActiveNamespace => {
    const checked = Control.safeParse({ ns, startSeq });
    if (!checked.success) throw new Error(`corrupt store control record ${key}: ${checked.error.message}`);
    return checked.data;
  };
  return {
    async peek() {
      const [ns, startSeq] = await redis.hmget(key, "ns", "startSeq");
      return ns === null ? null : parse(ns, startSeq);
    },
    async markBorn(ns) {
      // A namespace is built from its first write with the indexes of this version (change 44).
      await redis.mset(bornKey(prefix, ns), String(Date.now()), indexVersionKey(prefix, ns), INDEX_VERSION);
    },
    async switchTo(ns, startSeq) {
      const reply = await SWITCH_SCRIPT.run(redis, [key, bornKey(prefix, ns)], [ns, startSeq, Date.now()]);
      const [switched, old] = Array.isArray(reply) ? reply : [0];
      if (switched !== 1) throw new NamespaceLostError(ns);
      return typeof old === "string" ? old : null;
    },
    async isReset(ns, partition) {
      return (await redis.hget(resetKey(prefix, ns), String(partition))) === "1";
    },
    async markReset(ns, partition) {
      await redis.hset(resetKey(prefix, ns), String(partition), "1");
    },
  };
}
