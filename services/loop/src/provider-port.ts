import { emptyUsage } from "@fleet/protocol";
import type { StreamFn } from "./engine/index.js";

/**
 * The LLM port for `provider`: the worker's own, or one that answers every call with an error
 * message naming the unknown provider (the run then ends as pi's does on a provider error).
 */
export function streamFnFor(
  providers: Readonly<Record<string, StreamFn>>,
  provider: string,
  now: () => number,
): StreamFn {
  const fn = providers[provider];
  if (fn) return fn;
  return async function* unknownProvider(_ctx, options) {
    yield {
      type: "error",
      reason: "error",
      error: {
        role: "assistant",
        content: [],
        api: "unknown",
        provider,
        model: options.model.modelId,
        usage: emptyUsage(),
        stopReason: "error",
        errorMessage: `Unknown provider: ${provider}`,
        timestamp: now(),
      },
    };
  };
}
