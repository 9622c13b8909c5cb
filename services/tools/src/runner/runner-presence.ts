import { decodeRunnerPresence, RUNNER_PRESENCE_KEYS, type RunnerPresence, runnerPresenceKey } from "@fleet/protocol";
import { readKvEntries } from "@fleet/runtime";
import type { KV } from "@nats-io/kv";
import type { Logger } from "pino";

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
  const key = runnerPresenceKey(opts.runnerId);
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
      const entry = await opts.kv.get(runnerPresenceKey(runnerId));
      return entry !== null && entry.operation === "PUT";
    },
    async liveRunners() {
      const out: RunnerPresence[] = [];
      for (const entry of await readKvEntries(opts.kv, RUNNER_PRESENCE_KEYS)) {
        const presence = decodeRunnerPresence(entry.value);
        if (presence.ok) out.push(presence.value);
      }
      return out;
    },
  };
}
