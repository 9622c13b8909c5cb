import { decodeToolRegistration, type ToolRegistration } from "@fleet/protocol";
import { type FollowKvOptions, followKv } from "@fleet/runtime";
import type { KV } from "@nats-io/kv";

/**
 * A live view of KV `fleet_tools`: the tool definitions the LLM is offered and the JSON Schemas the
 * loop validates arguments against. Invalid registrations are skipped (and reported via `onInvalid`).
 */
export interface ToolRegistry {
  get(name: string): ToolRegistration | undefined;
  all(): ToolRegistration[];
  /** Resolves once the initial contents have been read. */
  ready: Promise<void>;
  stop(): void;
}

export function watchToolRegistry(
  kv: KV,
  onInvalid?: (key: string, error: string) => void,
  follow: FollowKvOptions = {},
): ToolRegistry {
  const tools = new Map<string, ToolRegistration>();
  const follower = followKv(
    kv,
    undefined,
    (key, operation, value) => {
      if (operation !== "PUT") {
        tools.delete(key);
        return;
      }
      const decoded = decodeToolRegistration(value);
      if (decoded.ok) tools.set(key, decoded.value);
      else onInvalid?.(key, decoded.error);
    },
    follow,
  );
  return {
    get: (name) => tools.get(name),
    all: () => [...tools.values()].sort((a, b) => a.name.localeCompare(b.name)),
    ready: follower.ready,
    stop: () => follower.stop(),
  };
}
