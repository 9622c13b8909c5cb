// Shorthands for scripting the fake Anthropic API (pure).

import type { FakeBlock, FakeHttpErrorReply, FakeMessageReply } from "./fake-anthropic-types.js";

/** A text block; `deltas` fixes how it is streamed. */
export function fakeText(text: string, deltas?: readonly string[]): FakeBlock {
  return deltas === undefined ? { type: "text", text } : { type: "text", text, deltas };
}

/** A thinking block, streamed as thinking_delta… then one signature_delta. */
export function fakeThinking(thinking: string, signature: string, deltas?: readonly string[]): FakeBlock {
  return deltas === undefined
    ? { type: "thinking", thinking, signature }
    : { type: "thinking", thinking, signature, deltas };
}

/** A tool_use block, streamed as input_json_delta pieces of `JSON.stringify(input)` (or `opts.deltas`). */
export function fakeToolUse(
  name: string,
  input: unknown,
  opts: { readonly id?: string; readonly deltas?: readonly string[] } = {},
): FakeBlock {
  return { type: "tool_use", name, input, ...opts };
}

/** A successful reply; a string is one text block. */
export function fakeReply(
  content: string | readonly FakeBlock[],
  opts: Omit<FakeMessageReply, "type" | "content"> = {},
): FakeMessageReply {
  return { type: "message", content: typeof content === "string" ? [fakeText(content)] : content, ...opts };
}

/** An HTTP error reply in Anthropic's JSON error shape. */
export function fakeHttpError(
  status: number,
  errorType: string,
  message: string,
  opts: Pick<FakeHttpErrorReply, "retryAfter" | "headers"> = {},
): FakeHttpErrorReply {
  return { type: "http_error", status, errorType, message, ...opts };
}

/**
 * Anthropic's answer to a request over the model's context window: 400 `invalid_request_error`
 * "prompt is too long: <promptTokens> tokens > <maxTokens> maximum".
 */
export function fakeContextOverflow(promptTokens: number, maxTokens = 200_000): FakeHttpErrorReply {
  return fakeHttpError(
    400,
    "invalid_request_error",
    `prompt is too long: ${promptTokens} tokens > ${maxTokens} maximum`,
  );
}

/** 429 `rate_limit_error` with a `retry-after` header in seconds. */
export function fakeRateLimited(
  retryAfterSeconds = 0,
  message = "Number of request tokens has exceeded your rate limit",
): FakeHttpErrorReply {
  return fakeHttpError(429, "rate_limit_error", message, { retryAfter: retryAfterSeconds });
}

/** 529 `overloaded_error` (HTTP). */
export function fakeOverloaded(message = "Overloaded"): FakeHttpErrorReply {
  return fakeHttpError(529, "overloaded_error", message);
}

/**
 * A stream that fails mid-way with an SSE `error` event after `afterEvents` events (default 2: message_start, ping).
 * Default error: `overloaded_error` / "Overloaded".
 */
export function fakeStreamError(
  opts: {
    readonly afterEvents?: number;
    readonly errorType?: string;
    readonly message?: string;
    readonly content?: readonly FakeBlock[];
  } = {},
): FakeMessageReply {
  return {
    type: "message",
    content: opts.content ?? [],
    errorAfterEvents: {
      events: opts.afterEvents ?? 2,
      errorType: opts.errorType ?? "overloaded_error",
      message: opts.message ?? "Overloaded",
    },
  };
}
