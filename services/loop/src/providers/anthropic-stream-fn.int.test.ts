import { type AssistantMessage, type AssistantStreamEvent, emptyUsage, type LlmMessage } from "@fleet/protocol";
import {
  type FakeAnthropic,
  fakeHttpError,
  fakeOverloaded,
  fakeReply,
  fakeStreamError,
  fakeText,
  fakeThinking,
  fakeToolUse,
  startFakeAnthropic,
} from "@fleet/testkit";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { createAnthropicStreamFn, MISSING_API_KEY_MESSAGE } from "./anthropic-stream-fn.js";
import { computeCost, getModelInfo } from "./models.js";
import type { LlmContext, StreamFn, StreamOptions } from "./types.js";

const KEY = "sk-fleet-test-key";
const NOW = 1_700_000_000_000;
const MODEL_ID = "claude-sonnet-5";
const OPTIONS: StreamOptions = { model: { provider: "anthropic", modelId: MODEL_ID }, thinkingLevel: "off" };
const CACHE = { type: "ephemeral" };
const PNG = "iVBORw0KGgoAAAANSUhEUg==";

const fake: FakeAnthropic = await startFakeAnthropic({ apiKey: KEY });
const streamFnWith = (maxRetries: number): StreamFn =>
  createAnthropicStreamFn({ apiKey: KEY, baseURL: fake.url, maxRetries, now: () => NOW });
const streamFn = streamFnWith(0);

const ask = (text: string): LlmContext => ({
  systemPrompt: "Be brief.",
  messages: [{ role: "user", content: text, timestamp: 1 }],
  tools: [],
});

/** Drains the stream; `onEvent` may abort. Resolves with every event (the stream never rejects). */
async function collect(
  stream: AsyncIterable<AssistantStreamEvent>,
  onEvent: (event: AssistantStreamEvent, index: number) => void = () => {},
): Promise<AssistantStreamEvent[]> {
  const events: AssistantStreamEvent[] = [];
  for await (const event of stream) {
    onEvent(event, events.length);
    events.push(event);
  }
  return events;
}

const run = (context: LlmContext, options: StreamOptions = OPTIONS, fn: StreamFn = streamFn) =>
  collect(fn(context, options, new AbortController().signal));

const usageOf = (input: number, output: number, cacheRead = 0, cacheWrite = 0) => ({
  input,
  output,
  cacheRead,
  cacheWrite,
  totalTokens: input + output + cacheRead + cacheWrite,
  cost: computeCost(getModelInfo(MODEL_ID).price, { input, output, cacheRead, cacheWrite }),
});

const initial: AssistantMessage = {
  role: "assistant",
  content: [],
  api: "anthropic-messages",
  provider: "anthropic",
  model: MODEL_ID,
  usage: emptyUsage(),
  stopReason: "stop",
  timestamp: NOW,
};

const terminalOf = (events: AssistantStreamEvent[]) => events.at(-1);

beforeEach(() => {
  fake.reset();
});

afterAll(async () => {
  await fake.stop();
});

describe("providers / anthropic streamFn against the fake API (real SDK)", () => {
  it("streams text: start, text deltas, done(stop) with the complete message", async () => {
    fake.script(
      fakeReply([fakeText("Hello, world!", ["Hel", "lo, ", "world!"])], {
        usage: { input_tokens: 12, output_tokens: 5 },
      }),
    );
    const events = await run(ask("hi"));
    expect(events).toEqual([
      { type: "start", partial: initial },
      { type: "text_start", contentIndex: 0 },
      { type: "text_delta", contentIndex: 0, delta: "Hel" },
      { type: "text_delta", contentIndex: 0, delta: "lo, " },
      { type: "text_delta", contentIndex: 0, delta: "world!" },
      { type: "text_end", contentIndex: 0, content: "Hello, world!" },
      {
        type: "done",
        reason: "stop",
        message: {
          ...initial,
          responseId: "msg_fake_0",
          content: [{ type: "text", text: "Hello, world!" }],
          usage: usageOf(12, 5),
        },
      },
    ]);
    const request = fake.requests[0]!;
    expect([request.path, request.auth, request.apiKey, request.stream]).toEqual(["/v1/messages", "bearer", KEY, true]);
  });

  it("streams without an abort signal", async () => {
    fake.script(fakeReply("no signal"));
    const events = await collect(streamFn(ask("hi"), OPTIONS));
    expect(terminalOf(events)).toMatchObject({
      type: "done",
      message: { content: [{ type: "text", text: "no signal" }] },
    });
  });

  it("streams thinking with its signature, with the thinking budget of the level", async () => {
    fake.script(
      fakeReply([fakeThinking("Two plus two.", "sig_abc123", ["Two plus", " two."]), fakeText("4", ["4"])], {
        usage: { input_tokens: 8, output_tokens: 9 },
      }),
    );
    const events = await run(ask("2+2?"), { ...OPTIONS, thinkingLevel: "medium" });
    expect(events.slice(1)).toEqual([
      { type: "thinking_start", contentIndex: 0 },
      { type: "thinking_delta", contentIndex: 0, delta: "Two plus" },
      { type: "thinking_delta", contentIndex: 0, delta: " two." },
      { type: "thinking_end", contentIndex: 0, content: "Two plus two.", thinkingSignature: "sig_abc123" },
      { type: "text_start", contentIndex: 1 },
      { type: "text_delta", contentIndex: 1, delta: "4" },
      { type: "text_end", contentIndex: 1, content: "4" },
      {
        type: "done",
        reason: "stop",
        message: {
          ...initial,
          responseId: "msg_fake_0",
          content: [
            { type: "thinking", thinking: "Two plus two.", thinkingSignature: "sig_abc123" },
            { type: "text", text: "4" },
          ],
          usage: usageOf(8, 9),
        },
      },
    ]);
    expect(fake.requests[0]!.body?.thinking).toEqual({ type: "enabled", budget_tokens: 10_240 });
    expect(fake.requests[0]!.body?.max_tokens).toBe(64_000);
  });

  it("assembles a tool call from several input_json_delta chunks", async () => {
    const input = { path: "src/a.ts", lines: [1, 2, 3] };
    fake.script(
      fakeReply([
        fakeText("Reading."),
        fakeToolUse("read", input, { id: "toolu_01", deltas: ['{"path":', '"src/a.ts","li', 'nes":[1,2,3]}'] }),
      ]),
    );
    const events = await run({ ...ask("read it"), tools: [{ name: "read", description: "Read", parameters: {} }] });
    const toolEvents = events.filter((e) => e.type.startsWith("toolcall_"));
    const toolCall = { type: "toolCall", id: "toolu_01", name: "read", arguments: input };
    expect(toolEvents).toEqual([
      { type: "toolcall_start", contentIndex: 1, id: "toolu_01", name: "read" },
      { type: "toolcall_delta", contentIndex: 1, delta: '{"path":' },
      { type: "toolcall_delta", contentIndex: 1, delta: '"src/a.ts","li' },
      { type: "toolcall_delta", contentIndex: 1, delta: 'nes":[1,2,3]}' },
      { type: "toolcall_end", contentIndex: 1, toolCall },
    ]);
    expect(terminalOf(events)).toMatchObject({
      type: "done",
      reason: "toolUse",
      message: { stopReason: "toolUse", content: [{ type: "text", text: "Reading." }, toolCall] },
    });
  });

  it("sends user and tool-result images as base64 image blocks", async () => {
    fake.script(fakeReply("A red dot."));
    const messages: LlmMessage[] = [
      {
        role: "user",
        content: [
          { type: "text", text: "What is this?" },
          { type: "image", data: PNG, mimeType: "image/png" },
        ],
        timestamp: 1,
      },
      {
        role: "assistant",
        content: [{ type: "toolCall", id: "t1", name: "screenshot", arguments: {} }],
        api: "anthropic-messages",
        provider: "anthropic",
        model: MODEL_ID,
        usage: emptyUsage(),
        stopReason: "toolUse",
        timestamp: 2,
      },
      {
        role: "toolResult",
        toolCallId: "t1",
        toolName: "screenshot",
        content: [{ type: "image", data: PNG, mimeType: "image/jpeg" }],
        isError: false,
        timestamp: 3,
      },
    ];
    const events = await run({ systemPrompt: "", messages, tools: [] });
    expect(terminalOf(events)?.type).toBe("done");
    const image = (mediaType: string) => ({
      type: "image",
      source: { type: "base64", media_type: mediaType, data: PNG },
    });
    expect(fake.requests[0]!.body?.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "What is this?" }, image("image/png")] },
      { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "screenshot", input: {} }] },
      {
        role: "user",
        content: [
          {
            type: "tool_result",
            tool_use_id: "t1",
            content: [image("image/jpeg")],
            is_error: false,
            cache_control: CACHE,
          },
        ],
      },
    ]);
  });

  it("sends the request body: cached system and last user turn, tools, thinking, merged results, replay rules", async () => {
    fake.script(fakeReply("ok"));
    const assistant = (content: AssistantMessage["content"], stopReason: AssistantMessage["stopReason"]) => ({
      role: "assistant" as const,
      content,
      api: "anthropic-messages",
      provider: "anthropic",
      model: MODEL_ID,
      usage: emptyUsage(),
      stopReason,
      timestamp: 2,
    });
    const schema = { type: "object", properties: { path: { type: "string" } }, required: ["path"] };
    await run(
      {
        systemPrompt: "You are Fleet.",
        messages: [
          { role: "user", content: "first", timestamp: 1 },
          assistant([{ type: "text", text: "half an ans" }], "aborted"),
          { role: "user", content: "second", timestamp: 3 },
          assistant([], "error"),
          { role: "user", content: "third", timestamp: 4 },
          assistant(
            [
              { type: "thinking", thinking: "plan", thinkingSignature: "sig_1" },
              { type: "toolCall", id: "a", name: "read", arguments: { path: "a" } },
              { type: "toolCall", id: "b", name: "read", arguments: { path: "b" } },
              { type: "toolCall", id: "c", name: "read", arguments: { path: "c" } },
            ],
            "toolUse",
          ),
          {
            role: "toolResult",
            toolCallId: "a",
            toolName: "read",
            content: [{ type: "text", text: "A" }],
            isError: false,
            timestamp: 5,
          },
          {
            role: "toolResult",
            toolCallId: "b",
            toolName: "read",
            content: [{ type: "text", text: "ENOENT" }],
            isError: true,
            timestamp: 6,
          },
        ],
        tools: [{ name: "read", description: "Read a file", parameters: schema }],
      },
      { ...OPTIONS, thinkingLevel: "low", maxTokens: 8_000 },
    );
    expect(fake.requests[0]!.rawBody).toEqual({
      model: MODEL_ID,
      max_tokens: 8_000,
      system: [{ type: "text", text: "You are Fleet.", cache_control: CACHE }],
      messages: [
        { role: "user", content: "first" },
        { role: "user", content: "second" },
        { role: "user", content: "third" },
        {
          role: "assistant",
          content: [
            { type: "thinking", thinking: "plan", signature: "sig_1" },
            { type: "tool_use", id: "a", name: "read", input: { path: "a" } },
            { type: "tool_use", id: "b", name: "read", input: { path: "b" } },
            { type: "tool_use", id: "c", name: "read", input: { path: "c" } },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "a", content: [{ type: "text", text: "A" }], is_error: false },
            { type: "tool_result", tool_use_id: "b", content: [{ type: "text", text: "ENOENT" }], is_error: true },
            {
              type: "tool_result",
              tool_use_id: "c",
              content: [{ type: "text", text: "No result provided" }],
              is_error: true,
              cache_control: CACHE,
            },
          ],
        },
      ],
      tools: [{ name: "read", description: "Read a file", input_schema: schema }],
      thinking: { type: "enabled", budget_tokens: 4_096 },
      stream: true,
    });
  });

  it("reports usage with cache reads and writes (message_delta overriding message_start) and its cost", async () => {
    // The fake reports output_tokens 1 in message_start and the final counts in message_delta.
    fake.script(
      fakeReply("cached", {
        usage: {
          input_tokens: 2_000,
          output_tokens: 300,
          cache_read_input_tokens: 50_000,
          cache_creation_input_tokens: 4_000,
        },
      }),
    );
    const events = await run(ask("again"), {
      ...OPTIONS,
      model: { provider: "anthropic", modelId: "claude-opus-4-1" },
    });
    const terminal = terminalOf(events);
    expect(terminal?.type).toBe("done");
    const usage = terminal?.type === "done" ? terminal.message.usage : undefined;
    expect(usage).toMatchObject({
      input: 2_000,
      output: 300,
      cacheRead: 50_000,
      cacheWrite: 4_000,
      totalTokens: 56_300,
    });
    // claude-opus-4-1: $15 in, $75 out, $1.50 cache read, $18.75 cache write per MTok
    expect(usage?.cost.input).toBeCloseTo(0.03, 12);
    expect(usage?.cost.output).toBeCloseTo(0.0225, 12);
    expect(usage?.cost.cacheRead).toBeCloseTo(0.075, 12);
    expect(usage?.cost.cacheWrite).toBeCloseTo(0.075, 12);
    expect(usage?.cost.total).toBeCloseTo(0.2025, 12);
  });

  it("gives an unknown model zero cost and its default max_tokens", async () => {
    fake.script(fakeReply("hi", { usage: { input_tokens: 10, output_tokens: 2 } }));
    const events = await run(ask("hi"), { ...OPTIONS, model: { provider: "anthropic", modelId: "my-gateway-model" } });
    expect(terminalOf(events)).toMatchObject({
      type: "done",
      message: { model: "my-gateway-model", usage: { input: 10, output: 2, cost: { total: 0 } } },
    });
    expect(fake.requests[0]!.body?.max_tokens).toBe(32_000);
  });

  it.each([
    ["end_turn", "stop"],
    ["stop_sequence", "stop"],
    ["max_tokens", "length"],
    ["tool_use", "toolUse"],
  ] as const)("maps stop_reason %s to done(%s)", async (stopReason, reason) => {
    fake.script(fakeReply("x", { stopReason }));
    const terminal = terminalOf(await run(ask("x")));
    expect(terminal).toMatchObject({ type: "done", reason, message: { stopReason: reason } });
  });

  it.each([
    ["pause_turn", "the API paused a long-running turn (pause_turn), which Fleet does not resume"],
    ["refusal", "the model refused to continue (refusal)"],
    [
      "model_context_window_exceeded",
      "the conversation exceeded the model's context window (model_context_window_exceeded)",
    ],
  ] as const)("maps stop_reason %s to an error naming it, content kept", async (stopReason, text) => {
    fake.script(fakeReply("partial", { stopReason }));
    const terminal = terminalOf(await run(ask("x")));
    expect(terminal).toMatchObject({
      type: "error",
      reason: "error",
      error: {
        content: [{ type: "text", text: "partial" }],
        stopReason: "error",
        errorMessage: `Anthropic stopped with stop_reason "${stopReason}": ${text}`,
      },
    });
  });

  it("turns a 400 into a single error event carrying the API's message", async () => {
    fake.script(
      fakeHttpError(400, "invalid_request_error", "messages.0.content: text content blocks must be non-empty"),
    );
    const events = await run(ask("x"));
    expect(events).toEqual([
      {
        type: "error",
        reason: "error",
        error: {
          ...initial,
          stopReason: "error",
          errorMessage: "400 invalid_request_error: messages.0.content: text content blocks must be non-empty",
        },
      },
    ]);
  });

  it("retries a 429 with the SDK's own retries, then streams the success", async () => {
    fake.script(
      fakeHttpError(429, "rate_limit_error", "Number of request tokens has exceeded your rate limit", {
        headers: { "retry-after-ms": "5" },
      }),
      fakeReply("after the retry"),
    );
    const events = await run(ask("x"), OPTIONS, streamFnWith(1));
    expect(terminalOf(events)).toMatchObject({
      type: "done",
      reason: "stop",
      message: { content: [{ type: "text", text: "after the retry" }] },
    });
    expect(events.filter((e) => e.type === "start")).toHaveLength(1);
    expect(fake.requests.map((r) => r.outcome)).toEqual(["completed", "completed"]);
  });

  it("retries 529 and 5xx too, up to maxRetries", async () => {
    const fast = { headers: { "retry-after-ms": "5" } };
    fake.script(
      fakeHttpError(529, "overloaded_error", "Overloaded", fast),
      fakeHttpError(500, "api_error", "Internal server error", fast),
      fakeReply("third time"),
    );
    const events = await run(ask("x"), OPTIONS, streamFnWith(2));
    expect(terminalOf(events)).toMatchObject({
      type: "done",
      message: { content: [{ type: "text", text: "third time" }] },
    });
    expect(fake.requests).toHaveLength(3);
  });

  it("turns a 429 that outlasts the retries into an error with the API's message", async () => {
    const rateLimited = fakeHttpError(429, "rate_limit_error", "Rate limited", { headers: { "retry-after-ms": "5" } });
    fake.script(rateLimited, rateLimited);
    const events = await run(ask("x"), OPTIONS, streamFnWith(1));
    expect(events).toEqual([
      {
        type: "error",
        reason: "error",
        error: { ...initial, stopReason: "error", errorMessage: "429 rate_limit_error: Rate limited" },
      },
    ]);
    expect(fake.requests).toHaveLength(2);
  });

  it("turns a 529 overloaded into an error", async () => {
    fake.script(fakeOverloaded());
    expect(await run(ask("x"))).toEqual([
      {
        type: "error",
        reason: "error",
        error: { ...initial, stopReason: "error", errorMessage: "529 overloaded_error: Overloaded" },
      },
    ]);
  });

  it("ends with an error keeping the partial content when an SSE error arrives mid-stream, without retrying", async () => {
    // events: message_start(0) ping(1) content_block_start(2) text_delta(3), then the SSE error
    fake.script({
      ...fakeStreamError({ afterEvents: 4, content: [fakeText("partial text", ["partial ", "text"])] }),
      usage: { input_tokens: 7, output_tokens: 3 },
    });
    const events = await run(ask("x"), OPTIONS, streamFnWith(2));
    expect(events).toEqual([
      { type: "start", partial: initial },
      { type: "text_start", contentIndex: 0 },
      { type: "text_delta", contentIndex: 0, delta: "partial " },
      {
        type: "error",
        reason: "error",
        error: {
          ...initial,
          responseId: "msg_fake_0",
          content: [{ type: "text", text: "partial " }],
          usage: usageOf(7, 1), // message_start's counters; message_delta never came
          stopReason: "error",
          errorMessage: "overloaded_error: Overloaded",
        },
      },
    ]);
    expect(fake.requests).toHaveLength(1);
  });

  it("aborts mid-stream: partial text kept, stopReason aborted, 'Request was aborted', connection closed", async () => {
    // message_start(0) ping(1) content_block_start(2) 2× text_delta(3,4), then the fake stalls
    fake.script(fakeReply([fakeText("Hello, world!", ["Hello, ", "wor", "ld!"])], { stallAfterEvents: 5 }));
    const controller = new AbortController();
    const events = await collect(streamFn(ask("x"), OPTIONS, controller.signal), (event) => {
      if (event.type === "text_delta" && event.delta === "wor") controller.abort();
    });
    expect(events.map((e) => e.type)).toEqual(["start", "text_start", "text_delta", "text_delta", "error"]);
    expect(terminalOf(events)).toMatchObject({
      type: "error",
      reason: "aborted",
      error: {
        content: [{ type: "text", text: "Hello, wor" }],
        stopReason: "aborted",
        errorMessage: "Request was aborted",
      },
    });
    expect(await fake.waitForOutcome(0)).toBe("client_closed");
  });

  it("aborts before the response: a single aborted error event", async () => {
    fake.script(fakeReply("never"));
    const controller = new AbortController();
    controller.abort();
    expect(await collect(streamFn(ask("x"), OPTIONS, controller.signal))).toEqual([
      {
        type: "error",
        reason: "aborted",
        error: { ...initial, stopReason: "aborted", errorMessage: "Request was aborted" },
      },
    ]);
  });

  it("closes the HTTP request when the consumer stops iterating early", async () => {
    fake.script(fakeReply([fakeText("a long answer", ["a ", "long ", "answer"])], { stallAfterEvents: 4 }));
    for await (const event of streamFn(ask("x"), OPTIONS, new AbortController().signal)) {
      if (event.type === "text_delta") break;
    }
    expect(await fake.waitForOutcome(0)).toBe("client_closed");
  });

  it("never rejects: every failure ends in exactly one terminal error event, last", async () => {
    const closedPort = await startFakeAnthropic();
    const deadUrl = closedPort.url;
    await closedPort.stop();
    fake.script(
      fakeHttpError(401, "authentication_error", "invalid x-api-key"),
      fakeHttpError(500, "api_error", "boom"),
      () => {
        throw new Error("responder failed");
      },
    );
    const cases: Array<[StreamFn, string]> = [
      [createAnthropicStreamFn({ apiKey: KEY, baseURL: deadUrl, maxRetries: 0, now: () => NOW }), "Connection error."],
      [createAnthropicStreamFn({ env: {}, baseURL: fake.url, now: () => NOW }), MISSING_API_KEY_MESSAGE],
      [streamFn, "401 authentication_error: invalid x-api-key"],
      [streamFn, "500 api_error: boom"],
      [streamFn, "500 api_error: fake-anthropic: responder threw: Error: responder failed"],
    ];
    for (const [fn, message] of cases) {
      const events = await collect(fn(ask("x"), OPTIONS, new AbortController().signal));
      const terminals = events.filter((e) => e.type === "done" || e.type === "error");
      expect(terminals).toHaveLength(1);
      const terminal = terminalOf(events);
      expect(terminal).toMatchObject({ type: "error", reason: "error", error: { stopReason: "error" } });
      const errorMessage = terminal?.type === "error" ? terminal.error.errorMessage : undefined;
      expect(errorMessage?.startsWith(message)).toBe(true);
      expect(errorMessage).not.toContain(KEY);
    }
  });

  it("reads ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL from the environment once, in the factory", async () => {
    const env: Record<string, string | undefined> = { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: fake.url };
    const fromEnv = createAnthropicStreamFn({ env, maxRetries: 0, now: () => NOW });
    env.ANTHROPIC_API_KEY = "sk-changed-later";
    env.ANTHROPIC_BASE_URL = "http://127.0.0.1:1";
    fake.script(fakeReply("from env"));
    expect(terminalOf(await run(ask("x"), OPTIONS, fromEnv))).toMatchObject({ type: "done" });
    expect(fake.requests[0]!.apiKey).toBe(KEY);
  });

  it("makes no request without an API key", async () => {
    const events = await run(
      ask("x"),
      OPTIONS,
      createAnthropicStreamFn({ env: {}, baseURL: fake.url, now: () => NOW }),
    );
    expect(events).toEqual([
      {
        type: "error",
        reason: "error",
        error: { ...initial, stopReason: "error", errorMessage: MISSING_API_KEY_MESSAGE },
      },
    ]);
    expect(fake.requests).toHaveLength(0);
  });
});
