import { describe, expect, it } from "vitest";
import { openAIReasoning, openAIReply, openAIText, openAIToolCall } from "./fake-openai-builders.js";
import { buildChatChunks, buildResponsesEvents, encodeOpenAIEvent } from "./fake-openai-events.js";

const ctx = (includeUsage: boolean) => ({
  index: 3,
  body: {
    model: "m",
    stream: true,
    messages: [],
    ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
  },
});

describe("the fake OpenAI's stream events", () => {
  it("Chat Completions: role chunk, deltas, a tool call's name before its arguments, finish, usage on request", () => {
    const reply = openAIReply(
      [
        openAIReasoning("hm", ["hm"]),
        openAIText("hi", ["h", "i"]),
        openAIToolCall("ls", { path: "." }, { deltas: ['{"path"', ':"."}'] }),
      ],
      { usage: { input: 10, output: 5, cached: 4 } },
    );
    const chunks = buildChatChunks(reply, ctx(true)).map(
      (e) => e.data as { choices: { delta: unknown; finish_reason: unknown }[]; usage?: unknown },
    );
    expect(chunks.map((c) => c.choices[0]?.delta)).toEqual([
      { role: "assistant", content: "" },
      { reasoning_content: "hm" },
      { content: "h" },
      { content: "i" },
      { tool_calls: [{ index: 0, id: "call_fake_3_2", type: "function", function: { name: "ls", arguments: "" } }] },
      { tool_calls: [{ index: 0, function: { arguments: '{"path"' } }] },
      { tool_calls: [{ index: 0, function: { arguments: ':"."}' } }] },
      {},
      undefined,
    ]);
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe("tool_calls");
    expect(chunks.at(-1)?.usage).toMatchObject({
      prompt_tokens: 10,
      completion_tokens: 5,
      prompt_tokens_details: { cached_tokens: 4 },
    });
    expect(buildChatChunks(openAIReply("x"), ctx(false)).some((e) => "usage" in (e.data as object))).toBe(false);
    expect(encodeOpenAIEvent({ event: "", data: { a: 1 } })).toBe('data: {"a":1}\n\n');
  });

  it("Responses: items added, streamed and done, then response.completed (incomplete for a length finish)", () => {
    const events = buildResponsesEvents(
      openAIReply([openAIText("ok", ["ok"])], { finishReason: "length" }),
      ctx(false),
    );
    expect(events.map((e) => e.event)).toEqual([
      "response.created",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.done",
      "response.output_item.done",
      "response.completed",
    ]);
    expect(events.at(-1)?.data).toMatchObject({
      response: { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } },
    });
    expect(encodeOpenAIEvent(events[0] as never)).toMatch(/^event: response\.created\ndata: /);
  });

  it("deltas that do not make up the value are a script mistake", () => {
    expect(() => buildChatChunks(openAIReply([openAIText("abc", ["ab"])]), ctx(false))).toThrow(
      'fake-openai: text deltas ["ab"] do not concatenate to "abc"',
    );
  });
});
