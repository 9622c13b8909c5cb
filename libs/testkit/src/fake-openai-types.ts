// Scripted responses and recorded requests of the fake OpenAI API (Chat Completions and Responses).

import { z } from "zod";
import type { RequestAuth, RequestOutcome } from "./fake-http.js";

/**
 * One content item of a scripted reply, rendered in either protocol. `deltas` overrides how its text
 * or arguments JSON is split into stream events; their concatenation must equal the full value.
 */
export type FakeOpenAIBlock =
  | { readonly type: "text"; readonly text: string; readonly deltas?: readonly string[] }
  /** Chat Completions: `delta.reasoning_content`; Responses: a `reasoning` item's summary text. */
  | { readonly type: "reasoning"; readonly text: string; readonly deltas?: readonly string[] }
  | {
      readonly type: "tool_call";
      /** Default `call_fake_<request index>_<block index>`. */
      readonly id?: string;
      readonly name: string;
      readonly arguments: unknown;
      readonly deltas?: readonly string[];
    };

/** Token usage of the reply; unset counters are derived (input ≈ request chars / 4, output ≈ content chars / 4). */
export interface FakeOpenAIUsage {
  /** Input tokens, cached ones included (OpenAI's `prompt_tokens` / `input_tokens`). */
  readonly input?: number;
  readonly output?: number;
  /** Of `input`, read from the prompt cache. */
  readonly cached?: number;
  /** Of `output`, spent reasoning. */
  readonly reasoning?: number;
}

/**
 * A successful reply. Stream event indices (for `stallAfterEvents` / `errorAfterEvents`) count every
 * event written, starting at 0 (Chat Completions: every `data:` chunk, `[DONE]` excluded).
 */
export interface FakeOpenAIReply {
  readonly type: "reply";
  readonly content: readonly FakeOpenAIBlock[];
  /** Default `tool_calls` when a block is a tool call, else `stop`. `length` is an incomplete response (Responses). */
  readonly finishReason?: "stop" | "length" | "tool_calls" | "content_filter";
  readonly usage?: FakeOpenAIUsage;
  /** Default: the request's `model`. */
  readonly model?: string;
  /** Wait this long before writing each event after the first. */
  readonly eventDelayMs?: number;
  /** Write this many events, then nothing more, keeping the connection open (until the client aborts or the fake stops). */
  readonly stallAfterEvents?: number;
  /** Write this many events, then an error event, then end the response. */
  readonly errorAfterEvents?: { readonly events: number; readonly code: string; readonly message: string };
  readonly headers?: Readonly<Record<string, string>>;
}

/** A non-2xx reply with OpenAI's body `{error: {message, type, param, code}}`. */
export interface FakeOpenAIHttpError {
  readonly type: "http_error";
  readonly status: number;
  readonly message: string;
  /** e.g. `invalid_request_error`, `rate_limit_exceeded` (default `invalid_request_error`). */
  readonly errorType?: string;
  /** e.g. `context_length_exceeded`. */
  readonly code?: string;
  /** Seconds, sent as `retry-after`. */
  readonly retryAfter?: number;
}

export type FakeOpenAIAnswer = FakeOpenAIReply | FakeOpenAIHttpError;

/** Which protocol a request spoke. */
export type FakeOpenAIApi = "chat" | "responses";

/** Chooses an answer from the recorded request. */
export type FakeOpenAIResponder = (request: RecordedOpenAIRequest) => FakeOpenAIAnswer;

/** The request body fields the fake reads (both protocols); other fields are kept as they came. */
export const OpenAIRequestBody = z.looseObject({
  model: z.string(),
  stream: z.boolean().optional(),
  /** Chat Completions. */
  messages: z.array(z.unknown()).optional(),
  /** Responses. */
  input: z.unknown().optional(),
  tools: z.array(z.unknown()).optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).optional(),
});
export type OpenAIRequestBody = z.infer<typeof OpenAIRequestBody>;

/** One request as the fake saw it (`headers` lower-cased, without `authorization`). */
export interface RecordedOpenAIRequest extends RequestAuth {
  readonly index: number;
  readonly method: string;
  readonly path: string;
  /** Undefined for a path that is neither protocol's (answered 404). */
  readonly api: FakeOpenAIApi | undefined;
  readonly headers: Readonly<Record<string, string>>;
  readonly rawBody: unknown;
  /** Undefined when the body did not match `OpenAIRequestBody` (answered 400). */
  readonly body: OpenAIRequestBody | undefined;
  readonly stream: boolean;
  outcome: RequestOutcome;
  eventsWritten: number;
}
