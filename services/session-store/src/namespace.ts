import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import { z } from "zod";
import { controlKey, resetKey } from "./keys.js";
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

/** Creates the control record unless it exists; returns the record in force. */
const INIT_SCRIPT = luaScript(`
if redis.call('HEXISTS', KEYS[1], 'ns') == 0 then
  redis.call('HSET', KEYS[1], 'ns', ARGV[1], 'startSeq', '1', 'switchedAt', ARGV[2])
end
return redis.call('HMGET', KEYS[1], 'ns', 'startSeq')
`);

/** Sets the control record; returns the previous namespace (or false). */
const SWITCH_SCRIPT = luaScript(`
local old = redis.call('HGET', KEYS[1], 'ns')
redis.call('HSET', KEYS[1], 'ns', ARGV[1], 'startSeq', ARGV[2], 'switchedAt', ARGV[3])
return old
`);

export function newNamespaceId(now: number = Date.now()): string {
  return `n${now.toString(36)}${randomBytes(3).toString("hex")}`;
}

export interface NamespaceControl {
  /** The active namespace; created (empty, startSeq 1) when there is none, e.g. after FLUSHALL. */
  active(): Promise<ActiveNamespace>;
  /** The active namespace without creating one. */
  peek(): Promise<ActiveNamespace | null>;
  /** Makes `ns` active from `startSeq`; returns the namespace it replaced. */
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
    async active() {
      const reply = await INIT_SCRIPT.run(redis, [key], [newNamespaceId(), Date.now()]);
      const [ns, startSeq] = Array.isArray(reply) ? reply : [];
      return parse(ns, startSeq);
    },
    async peek() {
      const [ns, startSeq] = await redis.hmget(key, "ns", "startSeq");
      return ns === null ? null : parse(ns, startSeq);
    },
    async switchTo(ns, startSeq) {
      const old = await SWITCH_SCRIPT.run(redis, [key], [ns, startSeq, Date.now()]);
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
