import { ABORTED_ERROR_MESSAGE, type AssistantStreamEvent } from "@fleet/protocol";
import { type Context, type Message, streamSimple, type Tool } from "@mariozechner/pi-ai";
import { failedCall } from "../provider-port.js";
import type { ModelCatalog } from "./model-catalog.js";
import { fleetStreamEvent } from "./pi-ai-events.js";
import type { LlmContext, StreamFn, StreamOptions } from "./types.js";

export interface PiAiProviderOptions {
  readonly catalog: ModelCatalog;
  /** The SDKs' own retries before the response stream opens (default: the SDK's, 2). */
  readonly maxRetries?: number;
  /** Clock for the messages of calls that fail before pi-ai is called. Default `Date.now`. */
  readonly now?: () => number;
}

/**
 * Every provider pi-ai serves (OpenAI Chat Completions and Responses, OpenAI-compatible endpoints,
 * Google, …) as one `StreamFn` (see `types.ts` for the contract), over pi-ai's `streamSimple`: the
 * call's `model` is resolved in `catalog` (pi-ai's registry and models.json), pi-ai applies its
 * replay rules, prices the usage from the model's `cost`, maps the thinking level (clamped to the
 * model's) and stops on `signal`.
 * An unknown model, or one without a key, ends the call in an `error` event without a request.
 */
export function createPiAiStreamFn(options: PiAiProviderOptions): StreamFn {
  const now = options.now ?? Date.now;
  return (context, streamOptions, signal) => streamPiAi(options, context, streamOptions, signal, now);
}

async function* streamPiAi(
  options: PiAiProviderOptions,
  context: LlmContext,
  streamOptions: StreamOptions,
  signal: AbortSignal | undefined,
  now: () => number,
): AsyncGenerator<AssistantStreamEvent> {
  const ref = streamOptions.model;
  const resolved = options.catalog.resolve(ref);
  if (!resolved) {
    yield failedCall(ref, `Unknown model: ${ref.provider}/${ref.modelId}`, now());
    return;
  }
  if (!resolved.apiKey) {
    yield failedCall(
      ref,
      `No API key for provider ${ref.provider}: set its key variable or "apiKey" in models.json`,
      now(),
    );
    return;
  }
  const headers = {
    ...resolved.headers,
    ...(streamOptions.traceparent ? { traceparent: streamOptions.traceparent } : {}),
    ...(streamOptions.tracestate ? { tracestate: streamOptions.tracestate } : {}),
  };
  let terminal = false;
  try {
    const stream = streamSimple(resolved.model, piContext(context), {
      apiKey: resolved.apiKey,
      ...(Object.keys(headers).length > 0 ? { headers } : {}),
      ...(signal ? { signal } : {}),
      ...(streamOptions.thinkingLevel !== "off" ? { reasoning: streamOptions.thinkingLevel } : {}),
      ...(streamOptions.maxTokens !== undefined ? { maxTokens: streamOptions.maxTokens } : {}),
      ...(streamOptions.sessionId ? { sessionId: streamOptions.sessionId } : {}),
      ...(options.maxRetries !== undefined ? { maxRetries: options.maxRetries } : {}),
    });
    for await (const event of stream) {
      const fleet = fleetStreamEvent(event);
      terminal = fleet.type === "done" || fleet.type === "error";
      yield fleet;
      if (terminal) return;
    }
  } catch (err) {
    if (terminal) return;
    const aborted = signal?.aborted === true;
    const message = failedCall(ref, aborted ? ABORTED_ERROR_MESSAGE : (err as Error).message, now());
    if (message.type === "error" && aborted) {
      yield { ...message, reason: "aborted", error: { ...message.error, stopReason: "aborted" } };
    } else yield message;
    return;
  }
  if (!terminal) yield failedCall(ref, "The provider's stream ended without a final message", now());
}

/** Fleet's request context as pi-ai's: the same message shapes; tools with their JSON Schema. */
function piContext(context: LlmContext): Context {
  return {
    systemPrompt: context.systemPrompt,
    messages: context.messages as unknown as Message[],
    tools: context.tools.map(
      (t): Tool => ({ name: t.name, description: t.description, parameters: t.parameters as Tool["parameters"] }),
    ),
  };
}

/**
 * The LLM ports pi-ai serves, by provider name: every provider of `catalog` but `anthropic` (Fleet's
 * own Anthropic client serves it) and `scripted`, all on one pi-ai `StreamFn`.
 */
export function piAiProviders(options: PiAiProviderOptions): Record<string, StreamFn> {
  const streamFn = createPiAiStreamFn(options);
  return Object.fromEntries(
    options.catalog
      .providers()
      .filter((p) => p !== "anthropic" && p !== "scripted")
      .map((p) => [p, streamFn]),
  );
}
