// Scripted responses and recorded requests of the fake Anthropic Messages API.

import { z } from "zod";
import type { RequestOutcome } from "./fake-http.js";

export type { RequestOutcome };

/** Anthropic stop reasons (SDK 1.14 `StopReason`). */
export type FakeStopReason =
  | "end_turn"
  | "max_tokens"
  | "stop_sequence"
  | "tool_use"
  | "pause_turn"
  | "refusal"
  | "model_context_window_exceeded";

/**
 * One content block of a scripted reply. `deltas` overrides how the streamed text/thinking/JSON is split
 * into `content_block_delta` events; their concatenation must equal the full value (checked when building).
 * Default split: pieces of at most `DEFAULT_CHUNK_CHARS` characters (a tool's input JSON always in ≥ 2 pieces).
 */
export type FakeBlock =
  | { readonly type: "text"; readonly text: string; readonly deltas?: readonly string[] }
  | {
      readonly type: "thinking";
      readonly thinking: string;
      readonly signature: string;
      readonly deltas?: readonly string[];
    }
  | { readonly type: "redacted_thinking"; readonly data: string }
  | {
      readonly type: "tool_use";
      /** Default `toolu_fake_<request index>_<block index>`. */
      readonly id?: string;
      readonly name: string;
      readonly input: unknown;
      /** Raw `partial_json` pieces; default: `JSON.stringify(input)` split. */
      readonly deltas?: readonly string[];
    };

/** Token usage reported by the reply; unset counters are 0 (cache counters) or derived from content. */
export interface FakeUsage {
  readonly input_tokens?: number;
  readonly output_tokens?: number;
  readonly cache_read_input_tokens?: number;
  readonly cache_creation_input_tokens?: number;
}

/**
 * A successful reply. Streamed as SSE when the request has `stream: true`, otherwise returned as one Message JSON.
 * SSE event indices (for `stallAfterEvents` / `errorAfterEvents`) count every event written, starting at 0:
 * `message_start`(0), `ping`(1), then per block `content_block_start`, deltas, `content_block_stop`,
 * then `message_delta`, `message_stop`.
 */
export interface FakeMessageReply {
  readonly type: "message";
  readonly content: readonly FakeBlock[];
  /** Default `tool_use` when a block is a tool_use, else `end_turn`. */
  readonly stopReason?: FakeStopReason;
  readonly usage?: FakeUsage;
  /** Default: the request's `model`. */
  readonly model?: string;
  /** Default `msg_fake_<request index>`. */
  readonly id?: string;
  /** Wait this long before writing each SSE event after the first. */
  readonly eventDelayMs?: number;
  /** Write this many SSE events, then write nothing more and keep the connection open (until the client aborts or the fake stops). */
  readonly stallAfterEvents?: number;
  /** Write this many SSE events, then an SSE `error` event, then end the response. */
  readonly errorAfterEvents?: { readonly events: number; readonly errorType: string; readonly message: string };
  /** Extra response headers. */
  readonly headers?: Readonly<Record<string, string>>;
}

/** A non-2xx HTTP reply with Anthropic's body `{type:"error", error:{type, message}}`. */
export interface FakeHttpErrorReply {
  readonly type: "http_error";
  readonly status: number;
  /** e.g. `invalid_request_error`, `rate_limit_error`, `api_error`, `overloaded_error`. */
  readonly errorType: string;
  readonly message: string;
  /** Seconds, sent as the `retry-after` header. */
  readonly retryAfter?: number;
  readonly headers?: Readonly<Record<string, string>>;
}

/** What the fake answers to one request. */
export type FakeReply = FakeMessageReply | FakeHttpErrorReply;

/** Chooses a reply from the recorded request (e.g. from `body.messages` or `body.tools`). */
export type FakeResponder = (request: RecordedRequest) => FakeReply;

/** The parts of a Messages API request body the fake reads; other fields are kept as they came. */
export const MessagesRequestBody = z.looseObject({
  model: z.string(),
  max_tokens: z.number().optional(),
  messages: z.array(z.unknown()),
  stream: z.boolean().optional(),
  system: z.unknown().optional(),
  tools: z.array(z.unknown()).optional(),
  thinking: z.unknown().optional(),
});
export type MessagesRequestBody = z.infer<typeof MessagesRequestBody>;

/**
 * One request as the fake saw it. `headers` are lower-cased with `authorization` and `x-api-key` removed;
 * the key itself is in `apiKey` (fake servers only ever see test keys).
 */
export interface RecordedRequest {
  /** 0-based arrival order. */
  readonly index: number;
  readonly method: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly auth: "bearer" | "x-api-key" | "none";
  readonly apiKey: string | undefined;
  /** The parsed JSON body, or undefined when it was not valid JSON. */
  readonly rawBody: unknown;
  /** The validated body; undefined when it did not match `MessagesRequestBody` (the fake answered 400). */
  readonly body: MessagesRequestBody | undefined;
  readonly stream: boolean;
  /** Updated while the response is written. */
  outcome: RequestOutcome;
  /** Number of SSE events written so far (0 for JSON responses). */
  eventsWritten: number;
}
