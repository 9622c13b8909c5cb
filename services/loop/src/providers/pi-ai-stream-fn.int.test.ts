// pi-ai's providers (the real `openai` SDK inside) against the testkit's fake OpenAI server, through
// Fleet's StreamFn: both protocols, usage and cost, thinking levels, tools, abort, errors, overflow.
import { type AssistantStreamEvent, isContextOverflow, type LlmMessage } from "@fleet/protocol";
import {
  type FakeOpenAI,
  openAIContextOverflow,
  openAIReasoning,
  openAIReply,
  openAIText,
  openAIToolCall,
  startFakeOpenAI,
} from "@fleet/testkit";
import { getProviders } from "@mariozechner/pi-ai";
import { afterAll, beforeEach, describe, expect, it, vi } from "vitest";
import { createModelCatalog } from "./model-catalog.js";
import { parseModelsJson } from "./models-json.js";
import { createPiAiStreamFn } from "./pi-ai-stream-fn.js";
import type { LlmContext, StreamOptions } from "./types.js";

const KEY = "sk-local-test";
const fake: FakeOpenAI = await startFakeOpenAI({ apiKey: KEY });
const PRICE = { input: 2, output: 8, cacheRead: 0.5, cacheWrite: 0 };

const modelsJson = parseModelsJson(
  JSON.stringify({
    providers: {
      // An OpenAI-compatible server (vLLM, Ollama…): Chat Completions.
      local: {
        baseUrl: fake.url,
        api: "openai-completions",
        apiKey: "LOCAL_LLM_KEY",
        compat: { supportsDeveloperRole: false },
        models: [{ id: "qwen-test", reasoning: true, contextWindow: 32_000, maxTokens: 4_096, cost: PRICE }],
      },
      // pi-ai's built-in OpenAI models (Responses API), routed to the fake.
      openai: { baseUrl: fake.url, apiKey: "OPENAI_TEST_KEY" },
    },
  }),
  new Set(getProviders()),
);
if (!modelsJson.ok) throw new Error(modelsJson.error);
const catalog = createModelCatalog(modelsJson.value, { LOCAL_LLM_KEY: KEY, OPENAI_TEST_KEY: KEY });
const streamFn = createPiAiStreamFn({ catalog, maxRetries: 0, now: () => 42 });

const LOCAL: StreamOptions = { model: { provider: "local", modelId: "qwen-test" }, thinkingLevel: "off" };
const OPENAI: StreamOptions = { model: { provider: "openai", modelId: "gpt-4o-mini" }, thinkingLevel: "off" };

const ask = (text: string, messages: LlmMessage[] = []): LlmContext => ({
  systemPrompt: "Be brief.",
  messages: [...messages, { role: "user", content: text, timestamp: 1 }],
  tools: [
    {
      name: "read",
      description: "Read a file",
      parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    },
  ],
});

async function collect(
  stream: AsyncIterable<AssistantStreamEvent>,
  onEvent: (event: AssistantStreamEvent) => void = () => {},
): Promise<AssistantStreamEvent[]> {
  const events: AssistantStreamEvent[] = [];
  for await (const event of stream) {
    onEvent(event);
    events.push(event);
  }
  return events;
}

const final = (events: AssistantStreamEvent[]) => {
  const last = events.at(-1);
  if (last?.type === "done") return last.message;
  if (last?.type === "error") return last.error;
  throw new Error(`no terminal event: ${JSON.stringify(last)}`);
};

beforeEach(() => fake.reset());
afterAll(async () => {
  await fake.stop();
});

describe("pi-ai providers through Fleet's StreamFn, on the fake OpenAI server", () => {
  it("Chat Completions: streams text, reports usage priced from models.json, sends key and system prompt", async () => {
    fake.script(
      openAIReply([openAIText("Hello there", ["Hel", "lo ", "there"])], {
        usage: { input: 1000, output: 500, cached: 200 },
      }),
    );
    const events = await collect(streamFn(ask("hi"), LOCAL));
    expect(events.map((e) => e.type)).toEqual([
      "start",
      "text_start",
      "text_delta",
      "text_delta",
      "text_delta",
      "text_end",
      "done",
    ]);
    const message = final(events);
    expect(message).toMatchObject({
      role: "assistant",
      api: "openai-completions",
      provider: "local",
      model: "qwen-test",
      stopReason: "stop",
      content: [{ type: "text", text: "Hello there" }],
    });
    expect(message.usage).toMatchObject({ input: 800, output: 500, cacheRead: 200, cacheWrite: 0 });
    expect(message.usage.cost.total).toBeCloseTo((800 * 2 + 500 * 8 + 200 * 0.5) / 1e6, 12);
    const request = fake.requests[0];
    expect(request?.api).toBe("chat");
    expect(request?.apiKey).toBe(KEY);
    expect(request?.body?.stream_options?.include_usage).toBe(true);
    expect(JSON.stringify(request?.body?.messages)).toContain('"role":"system","content":"Be brief."');
  });

  it("Chat Completions: reasoning and a tool call; the thinking level is sent as reasoning_effort", async () => {
    fake.script(
      openAIReply([openAIReasoning("Let me look."), openAIToolCall("read", { path: "a.txt" }, { id: "call_1" })]),
    );
    const events = await collect(streamFn(ask("read a.txt"), { ...LOCAL, thinkingLevel: "high" }));
    expect(fake.requests[0]?.rawBody).toMatchObject({ reasoning_effort: "high", tools: [{ type: "function" }] });
    const start = events.find((e) => e.type === "toolcall_start");
    expect(start).toEqual({ type: "toolcall_start", contentIndex: 1, id: "call_1", name: "read" });
    const message = final(events);
    expect(message.stopReason).toBe("toolUse");
    expect(message.content).toEqual([
      { type: "thinking", thinking: "Let me look.", thinkingSignature: "reasoning_content" },
      { type: "toolCall", id: "call_1", name: "read", arguments: { path: "a.txt" } },
    ]);
  });

  it("Chat Completions: replays a tool call and its result as pi-ai does", async () => {
    fake.script(openAIReply("It says hello."));
    const history: LlmMessage[] = [
      { role: "user", content: "read a.txt", timestamp: 1 },
      {
        role: "assistant",
        content: [{ type: "toolCall", id: "call_1", name: "read", arguments: { path: "a.txt" } }],
        api: "openai-completions",
        provider: "local",
        model: "qwen-test",
        usage: {
          input: 1,
          output: 1,
          cacheRead: 0,
          cacheWrite: 0,
          totalTokens: 2,
          cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
        },
        stopReason: "toolUse",
        timestamp: 2,
      },
      {
        role: "toolResult",
        toolCallId: "call_1",
        toolName: "read",
        content: [{ type: "text", text: "hello" }],
        isError: false,
        timestamp: 3,
      },
    ];
    const message = final(await collect(streamFn(ask("what does it say?", history), LOCAL)));
    expect(message.stopReason).toBe("stop");
    const sent = fake.requests[0]?.body?.messages as { role: string; tool_call_id?: string; content?: unknown }[];
    expect(sent.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool", "user"]);
    expect(sent[3]).toMatchObject({ tool_call_id: "call_1", content: "hello" });
  });

  it("Responses: a built-in OpenAI model with text, a tool call and cached input, priced at pi-ai's cost", async () => {
    fake.script(
      openAIReply([openAIText("Reading."), openAIToolCall("read", { path: "b.txt" }, { id: "call_9" })], {
        usage: { input: 1_000_000, output: 100_000, cached: 400_000 },
      }),
    );
    const events = await collect(streamFn(ask("read b.txt"), OPENAI));
    expect(fake.requests[0]?.api).toBe("responses");
    const message = final(events);
    expect(message).toMatchObject({
      api: "openai-responses",
      provider: "openai",
      model: "gpt-4o-mini",
      stopReason: "toolUse",
    });
    expect(message.content[0]).toMatchObject({ type: "text", text: "Reading." });
    expect(message.content[1]).toMatchObject({ type: "toolCall", name: "read", arguments: { path: "b.txt" } });
    expect(message.usage).toMatchObject({ input: 600_000, output: 100_000, cacheRead: 400_000 });
    // gpt-4o-mini in pi-ai 0.73.1: $0.15 in, $0.60 out, $0.08 cache read per million.
    expect(message.usage.cost.total).toBeCloseTo(0.6 * 0.15 + 0.1 * 0.6 + 0.4 * 0.08, 9);
    expect(catalog.info(OPENAI.model)).toMatchObject({ known: true, contextWindow: 128_000, price: { input: 0.15 } });
  });

  it("Responses: a reasoning model's thinking level and its reasoning summary", async () => {
    fake.script(
      openAIReply([openAIReasoning("Plan: answer.", ["Plan: answer."]), openAIText("Done.")], {
        usage: { reasoning: 7 },
      }),
    );
    const reasoning: StreamOptions = { model: { provider: "openai", modelId: "gpt-5-mini" }, thinkingLevel: "low" };
    const events = await collect(streamFn(ask("think"), reasoning));
    expect(fake.requests[0]?.rawBody).toMatchObject({ reasoning: { effort: "low" } });
    expect(events.map((e) => e.type)).toEqual([
      "start",
      "thinking_start",
      "thinking_delta",
      "thinking_end",
      "text_start",
      "text_delta",
      "text_end",
      "done",
    ]);
    const message = final(events);
    expect(message.content[0]).toMatchObject({ type: "thinking", thinking: "Plan: answer." });
    // the reasoning item travels back in the signature, for the next request
    expect(JSON.parse((message.content[0] as { thinkingSignature: string }).thinkingSignature)).toMatchObject({
      type: "reasoning",
    });
    expect(message.content[1]).toMatchObject({ type: "text", text: "Done." });
  });

  // Events up to the first text delta: Chat Completions role chunk + delta; Responses created, item
  // added, part added + delta.
  for (const [label, options, firstDeltaEvents] of [
    ["Chat Completions", LOCAL, 2],
    ["Responses", OPENAI, 4],
  ] as const) {
    it(`${label}: an abort mid-stream ends in aborted with the partial text and closes the request`, async () => {
      fake.script(
        openAIReply([openAIText("partial answer that never ends", ["partial ", "answer ", "that never ends"])], {
          stallAfterEvents: firstDeltaEvents,
        }),
      );
      const abort = new AbortController();
      const events = await collect(streamFn(ask("go"), options, abort.signal), (e) => {
        if (e.type === "text_delta") abort.abort();
      });
      const last = events.at(-1);
      expect(last?.type === "error" && last.reason).toBe("aborted");
      const message = final(events);
      expect(message.stopReason).toBe("aborted");
      expect(message.errorMessage).toBe("Request was aborted");
      expect(message.content).toMatchObject([{ type: "text", text: "partial " }]);
      expect(await fake.waitForOutcome(0)).toBe("client_closed");
    });

    it(`${label}: a context overflow is an error that pi's isContextOverflow recognises`, async () => {
      fake.script(openAIContextOverflow(200_000, 128_000));
      const message = final(await collect(streamFn(ask("too long"), options)));
      expect(message.stopReason).toBe("error");
      expect(message.errorMessage).toContain("maximum context length is 128000 tokens");
      expect(isContextOverflow(message, catalog.info(options.model).contextWindow)).toBe(true);
    });

    it(`${label}: an error mid-stream ends the call in error with the server's text`, async () => {
      fake.script(
        openAIReply("never finished", {
          errorAfterEvents: { events: 2, code: "server_error", message: "The server had an error" },
        }),
      );
      const message = final(await collect(streamFn(ask("go"), options)));
      expect(message.stopReason).toBe("error");
      expect(message.errorMessage).toContain("The server had an error");
    });
  }

  it("an unknown model, or a provider without a key, fails without a request", async () => {
    const unknown = final(
      await collect(streamFn(ask("hi"), { ...LOCAL, model: { provider: "local", modelId: "nope" } })),
    );
    expect(unknown).toMatchObject({ stopReason: "error", errorMessage: "Unknown model: local/nope" });
    vi.stubEnv("GEMINI_API_KEY", "");
    const noKey = final(
      await collect(streamFn(ask("hi"), { ...LOCAL, model: { provider: "google", modelId: "gemini-2.0-flash" } })),
    );
    expect(noKey).toMatchObject({
      stopReason: "error",
      errorMessage: expect.stringContaining("No API key for provider google"),
    });
    vi.unstubAllEnvs();
    expect(fake.requests).toHaveLength(0);
  });
});
