import { decodeToolRegistration, type ToolRegistration } from "@fleet/protocol";
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

export function watchToolRegistry(kv: KV, onInvalid?: (key: string, error: string) => void): ToolRegistry {
  const tools = new Map<string, ToolRegistration>();
  let stopped = false;
  let stopWatch: (() => void) | undefined;
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });

  const apply = (key: string, value: Uint8Array) => {
    const decoded = decodeToolRegistration(value);
    if (decoded.ok) tools.set(key, decoded.value);
    else onInvalid?.(key, decoded.error);
  };

  void (async () => {
    // Watch first (it replays the latest value of every key), then read a snapshot so `ready`
    // means "everything registered before now is known".
    const iter = await kv.watch();
    stopWatch = () => iter.stop();
    void (async () => {
      for await (const key of await kv.keys()) {
        const entry = await kv.get(key);
        if (entry && entry.operation === "PUT" && !tools.has(key)) apply(key, entry.value);
      }
    })()
      .catch(() => undefined)
      .finally(() => markReady());
    if (stopped) iter.stop();
    for await (const entry of iter) {
      if (entry.operation !== "PUT") {
        tools.delete(entry.key);
        continue;
      }
      apply(entry.key, entry.value);
    }
  })().catch(() => markReady());

  return {
    get: (name) => tools.get(name),
    all: () => [...tools.values()].sort((a, b) => a.name.localeCompare(b.name)),
    ready,
    stop() {
      stopped = true;
      stopWatch?.();
    },
  };
}
