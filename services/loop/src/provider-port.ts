import { type AssistantStreamEvent, emptyUsage, type ModelRef } from "@fleet/protocol";
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
    yield failedCall({ provider, modelId: options.model.modelId }, `Unknown provider: ${provider}`, now());
  };
}

/** The one event of an LLM call that failed before it was made: an error message saying why. */
export function failedCall(model: ModelRef, errorMessage: string, timestamp: number): AssistantStreamEvent {
  return {
    type: "error",
    reason: "error",
    error: {
      role: "assistant",
      content: [],
      api: "unknown",
      provider: model.provider,
      model: model.modelId,
      usage: emptyUsage(),
      stopReason: "error",
      errorMessage,
      timestamp,
    },
  };
}
