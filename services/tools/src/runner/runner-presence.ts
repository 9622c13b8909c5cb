import { decodeRunnerPresence, RUNNER_PRESENCE_KEYS, type RunnerPresence, runnerPresenceKey } from "@fleet/protocol";
import { readKvEntries } from "@fleet/runtime";
import type { KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";

export interface PresenceHeartbeat {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** When `runnerId`'s presence was last written (server time, epoch ms); undefined when it has none. */
  seenAt(runnerId: string): Promise<number | undefined>;
  /** Every live runner's presence (stale or unreadable entries are skipped). */
  liveRunners(): Promise<RunnerPresence[]>;
  /** Announces another set of served tools: written at once (resolves when written). */
  setTools(tools: RunnerPresence["tools"]): Promise<void>;
}

export function createPresenceHeartbeat(opts: {
  kv: KV;
  runnerId: string;
  tools: RunnerPresence["tools"];
  heartbeatMs: number;
  /** When given, presence is written again at once after each reconnect (keys may have expired during the outage). */
  nc?: NatsConnection;
  now: () => number;
  logger: Pick<Logger, "warn">;
}): PresenceHeartbeat {
  const key = runnerPresenceKey(opts.runnerId);
  const startedAt = opts.now();
  let tools = opts.tools;
  let timer: NodeJS.Timeout | undefined;
  let beating: Promise<unknown> | undefined;
  let stopped = false;

  const tick = () => {
    if (beating || stopped) return;
    beating = beat()
      .catch((err) => opts.logger.warn({ evt: "presence_heartbeat_failed", err }, "runner presence heartbeat failed"))
      .finally(() => {
        beating = undefined;
      });
  };

  async function reannounce(nc: NatsConnection) {
    for await (const status of nc.status()) {
      if (stopped) return;
      if (status.type === "reconnect") {
        opts.logger.warn({ evt: "presence_reannounce" }, "reconnected: runner presence written again");
        if (beating) await beating;
        tick();
      }
    }
  }

  const beat = () =>
    opts.kv.put(
      key,
      JSON.stringify({
        runnerId: opts.runnerId,
        tools,
        startedAt,
        ts: opts.now(),
      } satisfies RunnerPresence),
    );

  return {
    async start() {
      await beat();
      timer = setInterval(tick, opts.heartbeatMs);
      timer.unref();
      if (opts.nc) void reannounce(opts.nc);
    },
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      if (beating) await beating;
      await opts.kv.delete(key).catch(() => undefined);
    },
    async setTools(next) {
      tools = next;
      if (beating) await beating;
      if (!stopped) await beat();
    },
    async seenAt(runnerId) {
      const entry = await opts.kv.get(runnerPresenceKey(runnerId));
      return entry !== null && entry.operation === "PUT" ? entry.created.getTime() : undefined;
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
