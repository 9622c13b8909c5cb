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

  void (async () => {
    const iter = await kv.watch({ initializedFn: () => markReady() });
    stopWatch = () => iter.stop();
    if (stopped) iter.stop();
    for await (const entry of iter) {
      if (entry.operation !== "PUT") {
        tools.delete(entry.key);
        continue;
      }
      const decoded = decodeToolRegistration(entry.value);
      if (decoded.ok) tools.set(entry.key, decoded.value);
      else onInvalid?.(entry.key, decoded.error);
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
