// Shorthands for scripting the fake OpenAI API (pure).

import type { FakeOpenAIBlock, FakeOpenAIHttpError, FakeOpenAIReply } from "./fake-openai-types.js";

/** Output text; `deltas` fixes how it is streamed. */
export function openAIText(text: string, deltas?: readonly string[]): FakeOpenAIBlock {
  return deltas === undefined ? { type: "text", text } : { type: "text", text, deltas };
}

/** Reasoning (Chat Completions `reasoning_content`, a Responses reasoning summary). */
export function openAIReasoning(text: string, deltas?: readonly string[]): FakeOpenAIBlock {
  return deltas === undefined ? { type: "reasoning", text } : { type: "reasoning", text, deltas };
}

/** A function call whose arguments stream as pieces of `JSON.stringify(args)` (or `opts.deltas`). */
export function openAIToolCall(
  name: string,
  args: unknown,
  opts: { readonly id?: string; readonly deltas?: readonly string[] } = {},
): FakeOpenAIBlock {
  return { type: "tool_call", name, arguments: args, ...opts };
}

/** A successful reply; a string is one text block. */
export function openAIReply(
  content: string | readonly FakeOpenAIBlock[],
  opts: Omit<FakeOpenAIReply, "type" | "content"> = {},
): FakeOpenAIReply {
  return { type: "reply", content: typeof content === "string" ? [openAIText(content)] : content, ...opts };
}

/** An HTTP error in OpenAI's JSON error shape. */
export function openAIHttpError(
  status: number,
  message: string,
  opts: Omit<FakeOpenAIHttpError, "type" | "status" | "message"> = {},
): FakeOpenAIHttpError {
  return { type: "http_error", status, message, ...opts };
}

/** OpenAI's answer to a request over the context window: 400 `context_length_exceeded`. */
export function openAIContextOverflow(promptTokens: number, contextWindow = 128_000): FakeOpenAIHttpError {
  return openAIHttpError(
    400,
    `This model's maximum context length is ${contextWindow} tokens. However, your messages resulted in ${promptTokens} tokens. Please reduce the length of the messages.`,
    { code: "context_length_exceeded" },
  );
}

/** 429 `rate_limit_exceeded` with a `retry-after` header in seconds. */
export function openAIRateLimited(retryAfterSeconds = 0): FakeOpenAIHttpError {
  return openAIHttpError(429, "Rate limit reached for requests", {
    errorType: "requests",
    code: "rate_limit_exceeded",
    retryAfter: retryAfterSeconds,
  });
}
