import type { KV } from "@nats-io/kv";
import type { Logger } from "pino";
import { z } from "zod";

/**
 * Runner presence: key `runner.<runnerId>` in KV `fleet_leases`, rewritten every `heartbeatMs` and
 * removed by the bucket's TTL when the runner dies (deleted on a clean stop). A runner is *live*
 * while its key exists. The value lists the tools it serves with their version and schema hash.
 */
export const RunnerPresence = z.object({
  runnerId: z.string(),
  tools: z.record(z.string(), z.object({ version: z.string(), schemaHash: z.string() })),
  startedAt: z.number(),
  ts: z.number(),
});
export type RunnerPresence = z.infer<typeof RunnerPresence>;

export const presenceKey = (runnerId: string) => `runner.${runnerId}`;

export interface PresenceHeartbeat {
  start(): Promise<void>;
  stop(): Promise<void>;
  isLive(runnerId: string): Promise<boolean>;
  /** Every live runner's presence (stale or unreadable entries are skipped). */
  liveRunners(): Promise<RunnerPresence[]>;
}

export function createPresenceHeartbeat(opts: {
  kv: KV;
  runnerId: string;
  tools: RunnerPresence["tools"];
  heartbeatMs: number;
  now: () => number;
  logger: Pick<Logger, "warn">;
}): PresenceHeartbeat {
  const key = presenceKey(opts.runnerId);
  const startedAt = opts.now();
  let timer: NodeJS.Timeout | undefined;
  let beating: Promise<unknown> | undefined;

  const beat = () =>
    opts.kv.put(
      key,
      JSON.stringify({
        runnerId: opts.runnerId,
        tools: opts.tools,
        startedAt,
        ts: opts.now(),
      } satisfies RunnerPresence),
    );

  return {
    async start() {
      await beat();
      timer = setInterval(() => {
        if (beating) return;
        beating = beat()
          .catch((err) =>
            opts.logger.warn({ evt: "presence_heartbeat_failed", err }, "runner presence heartbeat failed"),
          )
          .finally(() => {
            beating = undefined;
          });
      }, opts.heartbeatMs);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      if (beating) await beating;
      await opts.kv.delete(key).catch(() => undefined);
    },
    async isLive(runnerId) {
      const entry = await opts.kv.get(presenceKey(runnerId));
      return entry !== null && entry.operation === "PUT";
    },
    async liveRunners() {
      const out: RunnerPresence[] = [];
      const keys: string[] = [];
      for await (const k of await opts.kv.keys("runner.*")) keys.push(k);
      for (const k of keys) {
        const entry = await opts.kv.get(k);
        if (entry?.operation !== "PUT") continue;
        const parsed = RunnerPresence.safeParse(safeJson(entry.string()));
        if (parsed.success) out.push(parsed.data);
      }
      return out;
    },
  };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
