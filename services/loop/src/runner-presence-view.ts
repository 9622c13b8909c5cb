import { decodeRunnerPresence, RUNNER_PRESENCE_KEYS } from "@fleet/protocol";
import { followKv } from "@fleet/runtime";
import type { KV } from "@nats-io/kv";

/**
 * Which tools a live runner serves, from the runners' presence keys in KV `fleet_leases`. A runner
 * counts as live for `ttlMs` after its presence was last seen written (nats-server 2.9 expires keys
 * by age without telling watchers) and until its key is deleted (a clean stop).
 */
export interface RunnerPresenceView {
  /** Resolves once the presence written before now is known. */
  ready: Promise<void>;
  /** True when a live runner serves `toolName`. */
  serves(toolName: string): boolean;
  stop(): void;
}

export function watchRunnerPresence(kv: KV, opts: { ttlMs: number; now: () => number }): RunnerPresenceView {
  const runners = new Map<string, { tools: ReadonlySet<string>; seenAt: number }>();
  const follower = followKv(kv, RUNNER_PRESENCE_KEYS, (key, operation, value) => {
    if (operation !== "PUT") {
      runners.delete(key);
      return;
    }
    const presence = decodeRunnerPresence(value);
    if (presence.ok) runners.set(key, { tools: new Set(Object.keys(presence.value.tools)), seenAt: opts.now() });
  });
  return {
    ready: follower.ready,
    serves(toolName) {
      const now = opts.now();
      for (const runner of runners.values()) {
        if (now - runner.seenAt <= opts.ttlMs && runner.tools.has(toolName)) return true;
      }
      return false;
    },
    stop: () => follower.stop(),
  };
}
