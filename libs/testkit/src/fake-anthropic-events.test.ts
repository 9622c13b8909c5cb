import { describe, expect, it } from "vitest";
import { fakeReply, fakeText, fakeThinking, fakeToolUse } from "./fake-anthropic-builders.js";
import { buildMessage, buildSseEvents, encodeSseEvent, splitIntoChunks } from "./fake-anthropic-events.js";

const ctx = { index: 3, body: { model: "claude-fake-1", messages: [{ role: "user", content: "hi" }] } };
const usage = { input_tokens: 42, output_tokens: 17, cache_read_input_tokens: 7, cache_creation_input_tokens: 5 };
const fullUsage = (u: typeof usage) => ({
  ...u,
  cache_creation: { ephemeral_5m_input_tokens: u.cache_creation_input_tokens, ephemeral_1h_input_tokens: 0 },
  server_tool_use: null,
  service_tier: "standard",
  inference_geo: null,
  output_tokens_details: null,
  speed: null,
});

describe("testkit / fake Anthropic events", () => {
  it("streams thinking, text and tool_use blocks in Anthropic's SSE order", () => {
    const reply = fakeReply(
      [
        fakeThinking("hmm", "sig-1", ["h", "mm"]),
        fakeText("Hi!", ["H", "i!"]),
        fakeToolUse("get_weather", { city: "Paris" }, { deltas: ['{"city":', '"Paris"}'] }),
      ],
      { usage },
    );
    expect(buildSseEvents(reply, ctx).map((e) => e.data)).toEqual([
      {
        type: "message_start",
        message: {
          id: "msg_fake_3",
          type: "message",
          role: "assistant",
          model: "claude-fake-1",
          container: null,
          diagnostics: null,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          stop_details: null,
          usage: fullUsage({ ...usage, output_tokens: 1 }),
        },
      },
      { type: "ping" },
      { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "", signature: "" } },
      { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "h" } },
      { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "mm" } },
      { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "sig-1" } },
      { type: "content_block_stop", index: 0 },
      { type: "content_block_start", index: 1, content_block: { type: "text", text: "", citations: null } },
      { type: "content_block_delta", index: 1, delta: { type: "text_delta", text: "H" } },
      { type: "content_block_delta", index: 1, delta: { type: "text_delta", text: "i!" } },
      { type: "content_block_stop", index: 1 },
      {
        type: "content_block_start",
        index: 2,
        content_block: {
          type: "tool_use",
          id: "toolu_fake_3_2",
          name: "get_weather",
          input: {},
          caller: { type: "direct" },
        },
      },
      { type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: '{"city":' } },
      { type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: '"Paris"}' } },
      { type: "content_block_stop", index: 2 },
      {
        type: "message_delta",
        delta: { stop_reason: "tool_use", stop_sequence: null, stop_details: null, container: null },
        usage: { ...usage, server_tool_use: null, output_tokens_details: null },
      },
      { type: "message_stop" },
    ]);
  });

  it("uses each event's type as the SSE event name", () => {
    const events = buildSseEvents(fakeReply("x"), ctx);
    expect(events.map((e) => e.event)).toEqual([
      "message_start",
      "ping",
      "content_block_start",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    expect(encodeSseEvent(events[1]!)).toBe('event: ping\ndata: {"type":"ping"}\n\n');
  });

  it("builds the non-streaming Message with derived usage and end_turn", () => {
    expect(buildMessage(fakeReply("Hello, world!"), ctx)).toEqual({
      id: "msg_fake_3",
      type: "message",
      role: "assistant",
      model: "claude-fake-1",
      container: null,
      diagnostics: null,
      content: [{ type: "text", text: "Hello, world!", citations: null }],
      stop_reason: "end_turn",
      stop_sequence: null,
      stop_details: null,
      // input: JSON of messages is 31 chars → 8; output: 13 chars → 4
      usage: fullUsage({
        input_tokens: 8,
        output_tokens: 4,
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: 0,
      }),
    });
  });

  it("splits by code points, default at most 8 characters, tool JSON in at least 2 pieces", () => {
    expect(splitIntoChunks("Hello, world!")).toEqual(["Hello, w", "orld!"]);
    expect(splitIntoChunks("a😀b", 2)).toEqual(["a😀", "b"]);
    expect(splitIntoChunks("{}", 8, 2)).toEqual(["{", "}"]);
    expect(splitIntoChunks("")).toEqual([]);
    const tool = buildSseEvents(fakeReply([fakeToolUse("t", { a: 1 })]), ctx);
    expect(tool.filter((e) => e.event === "content_block_delta").map((e) => e.data)).toEqual([
      { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: '{"a"' } },
      { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: ":1}" } },
    ]);
  });

  it("rejects deltas that do not concatenate to the block's value", () => {
    expect(() => buildSseEvents(fakeReply([fakeText("abc", ["ab"])]), ctx)).toThrow(
      'fake-anthropic: text deltas ["ab"] do not concatenate to "abc"',
    );
  });
});
