import { decodeRunnerPresence, RUNNER_PRESENCE_KEYS } from "@fleet/protocol";
import { type FollowKvOptions, followKv } from "@fleet/runtime";
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
  /**
   * Resolves true as soon as a live runner serves `toolName`, false after `timeoutMs` without one, and
   * false at once when no runner of it was seen within `RECENT_MS` (or 3 TTLs if longer). A bus outage (restart, pause) can let
   * presence go stale while runners live; they write it again on reconnect. A view younger than that
   * window that knows no live runner at all waits too: a worker started during an outage has not
   * seen the runners yet.
   */
  whenServed(toolName: string, timeoutMs: number): Promise<boolean>;
  stop(): void;
}

/** A runner seen this recently may only be cut off by a bus outage: calls wait for it to reappear. */
const RECENT_MS = 30_000;

export function watchRunnerPresence(
  kv: KV,
  opts: { ttlMs: number; now: () => number; follow?: FollowKvOptions },
): RunnerPresenceView {
  const startedAt = opts.now();
  const runners = new Map<string, { tools: ReadonlySet<string>; seenAt: number }>();
  const waiters = new Set<() => void>();
  const follower = followKv(
    kv,
    RUNNER_PRESENCE_KEYS,
    (key, operation, value) => {
      if (operation !== "PUT") {
        runners.delete(key);
        return;
      }
      const presence = decodeRunnerPresence(value);
      if (!presence.ok) return;
      runners.set(key, { tools: new Set(Object.keys(presence.value.tools)), seenAt: opts.now() });
      for (const wake of [...waiters]) wake();
    },
    opts.follow,
  );
  const serves = (toolName: string) => {
    const now = opts.now();
    for (const runner of runners.values()) {
      if (now - runner.seenAt <= opts.ttlMs && runner.tools.has(toolName)) return true;
    }
    return false;
  };
  return {
    ready: follower.ready,
    serves,
    whenServed(toolName, timeoutMs) {
      if (serves(toolName)) return Promise.resolve(true);
      const now = opts.now();
      const window = Math.max(RECENT_MS, 3 * opts.ttlMs);
      const known = [...runners.values()];
      // Young and knowing no live runner at all: started during an outage, before runners came back.
      const unsure = now - startedAt <= window && !known.some((r) => now - r.seenAt <= opts.ttlMs);
      const recent = unsure || known.some((r) => r.tools.has(toolName) && now - r.seenAt <= window);
      if (!recent) return Promise.resolve(false);
      return new Promise<boolean>((resolve) => {
        const done = (served: boolean) => {
          waiters.delete(check);
          clearTimeout(timer);
          resolve(served);
        };
        const check = () => {
          if (serves(toolName)) done(true);
        };
        const timer = setTimeout(() => done(false), timeoutMs);
        waiters.add(check);
      });
    },
    stop: () => {
      follower.stop();
      for (const wake of [...waiters]) wake();
    },
  };
}
