import Anthropic, { type ClientOptions } from "@anthropic-ai/sdk";
import { ABORTED_ERROR_MESSAGE, type AssistantStreamEvent } from "@fleet/protocol";
import { createAnthropicStreamState } from "./anthropic-stream-state.js";
import { buildAnthropicRequest } from "./build-anthropic-request.js";
import { describeAnthropicError } from "./describe-anthropic-error.js";
import { getModelInfo } from "./models.js";
import type { LlmContext, StreamFn, StreamOptions } from "./types.js";

export interface AnthropicProviderOptions {
  /** Default: `ANTHROPIC_API_KEY` from `env`. Sent by SDK 1.14 as `Authorization: Bearer`. */
  readonly apiKey?: string;
  /** Default: `ANTHROPIC_BASE_URL` from `env`, else the SDK's default (https://api.anthropic.com). */
  readonly baseURL?: string;
  /**
   * The SDK's own retries (default 2) for connection errors, 408, 409, 429 and 5xx (529 included), with
   * its backoff and `retry-after(-ms)` handling. They happen inside `messages.create()`, i.e. before the
   * response stream opens: before `start` and before the first delta. A failure after the stream opened (an
   * SSE `error` event, a dropped connection) is never retried; it ends the call with stopReason `error`.
   * Fleet has no second retry layer for LLM calls.
   */
  readonly maxRetries?: number;
  /** Other SDK client options (`fetch`, `timeout`, `defaultHeaders`, `logger`, …). */
  readonly clientOptions?: Omit<ClientOptions, "apiKey" | "authToken" | "baseURL" | "maxRetries">;
  /** Read once, here. Default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Clock for message timestamps. Default `Date.now`. */
  readonly now?: () => number;
}

export const DEFAULT_MAX_RETRIES = 2;

/** Error text of every call when no API key was configured. */
export const MISSING_API_KEY_MESSAGE = "No Anthropic API key: set ANTHROPIC_API_KEY or pass apiKey";

/**
 * The `anthropic` provider as a `StreamFn` (see `types.ts` for the contract), on `@anthropic-ai/sdk`
 * `messages.create({stream: true})`. The environment is read once, here; the factory never throws (a
 * missing key makes every call end in an `error` event).
 *
 * Event order: `start` once the HTTP response is accepted (after any SDK retries), the deltas, then one
 * terminal event. When the request itself fails (HTTP error after retries, connection error, abort before
 * the response) there is no `start`: the only event is the terminal `error`, as in pi-ai.
 * Abort: the signal is passed to the SDK; because the SDK ends its raw stream iteration silently on abort,
 * `signal.aborted` is checked after every failure and after the stream ends.
 */
export function createAnthropicStreamFn(providerOptions: AnthropicProviderOptions = {}): StreamFn {
  const env = providerOptions.env ?? process.env;
  const apiKey = providerOptions.apiKey ?? env.ANTHROPIC_API_KEY;
  const baseURL = providerOptions.baseURL ?? env.ANTHROPIC_BASE_URL;
  const now = providerOptions.now ?? Date.now;
  const client =
    apiKey === undefined || apiKey === ""
      ? undefined
      : new Anthropic({
          ...providerOptions.clientOptions,
          apiKey,
          ...(baseURL ? { baseURL } : {}),
          maxRetries: providerOptions.maxRetries ?? DEFAULT_MAX_RETRIES,
        });

  return (context, options, signal) => streamAnthropic(client, context, options, signal, now);
}

async function* streamAnthropic(
  client: Anthropic | undefined,
  context: LlmContext,
  options: StreamOptions,
  signal: AbortSignal | undefined,
  now: () => number,
): AsyncGenerator<AssistantStreamEvent> {
  const model = getModelInfo(options.model.modelId);
  const state = createAnthropicStreamState({
    provider: options.model.provider,
    model: options.model.modelId,
    price: model.price,
    timestamp: now(),
  });
  const aborted = () => signal?.aborted === true;
  const failure = (error: unknown) =>
    aborted() ? state.fail("aborted", ABORTED_ERROR_MESSAGE) : state.fail("error", describeAnthropicError(error));

  if (!client) {
    yield state.fail("error", MISSING_API_KEY_MESSAGE);
    return;
  }
  let stream: AsyncIterable<Anthropic.RawMessageStreamEvent>;
  try {
    stream = await client.messages.create(buildAnthropicRequest(context, options, model), {
      ...(signal ? { signal } : {}),
      ...traceHeaders(options),
    });
  } catch (error) {
    yield failure(error);
    return;
  }
  yield { type: "start", partial: state.snapshot() };
  let terminal: AssistantStreamEvent;
  try {
    for await (const event of stream) {
      for (const delta of state.apply(event)) yield delta;
    }
    terminal = aborted() ? state.fail("aborted", ABORTED_ERROR_MESSAGE) : state.finish();
  } catch (error) {
    terminal = failure(error);
  }
  yield terminal;
}

/** W3C trace context headers of the call's `chat` span (change 46), when the run has one. */
function traceHeaders(options: StreamOptions): { headers?: Record<string, string> } {
  if (!options.traceparent) return {};
  return {
    headers: { traceparent: options.traceparent, ...(options.tracestate ? { tracestate: options.tracestate } : {}) },
  };
}
