import type { Anthropic } from "@anthropic-ai/sdk";
import { type AssistantMessage, emptyUsage } from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import { createAnthropicStreamState } from "./anthropic-stream-state.js";
import { computeCost, getModelInfo } from "./models.js";

type Raw = Anthropic.RawMessageStreamEvent;
const raw = (event: object): Raw => event as Raw;

const messageStart = (usage: object = {}) =>
  raw({
    type: "message_start",
    message: {
      id: "msg_1",
      type: "message",
      role: "assistant",
      model: "claude-sonnet-5",
      content: [],
      stop_reason: null,
      usage: {
        input_tokens: 100,
        output_tokens: 1,
        cache_read_input_tokens: 20,
        cache_creation_input_tokens: 10,
        ...usage,
      },
    },
  });
const blockStart = (index: number, content_block: object) => raw({ type: "content_block_start", index, content_block });
const delta = (index: number, d: object) => raw({ type: "content_block_delta", index, delta: d });
const blockStop = (index: number) => raw({ type: "content_block_stop", index });
const messageDelta = (stop_reason: string | null, usage: object = {}) =>
  raw({
    type: "message_delta",
    delta: { stop_reason, stop_sequence: null },
    usage: {
      input_tokens: null,
      output_tokens: 50,
      cache_read_input_tokens: null,
      cache_creation_input_tokens: null,
      ...usage,
    },
  });
const messageStop = raw({ type: "message_stop" });

const newState = () =>
  createAnthropicStreamState({
    provider: "anthropic",
    model: "claude-sonnet-5",
    price: getModelInfo("claude-sonnet-5").price,
    timestamp: 1_700_000_000_000,
  });

const base: AssistantMessage = {
  role: "assistant",
  content: [],
  api: "anthropic-messages",
  provider: "anthropic",
  model: "claude-sonnet-5",
  usage: emptyUsage(),
  stopReason: "stop",
  timestamp: 1_700_000_000_000,
};

const SONNET_PRICE = getModelInfo("claude-sonnet-5").price;
const usageOf = (input: number, output: number, cacheRead: number, cacheWrite: number) => ({
  input,
  output,
  cacheRead,
  cacheWrite,
  totalTokens: input + output + cacheRead + cacheWrite,
  cost: computeCost(SONNET_PRICE, { input, output, cacheRead, cacheWrite }),
});

const applyAll = (state: ReturnType<typeof newState>, events: Raw[]) => events.flatMap((e) => state.apply(e));

describe("providers / anthropic stream state", () => {
  it("folds thinking, text and a tool call into deltas and the final message", () => {
    const state = newState();
    expect(state.snapshot()).toEqual(base);
    const deltas = applyAll(state, [
      messageStart(),
      blockStart(0, { type: "thinking", thinking: "", signature: "" }),
      delta(0, { type: "thinking_delta", thinking: "Let me " }),
      delta(0, { type: "thinking_delta", thinking: "think." }),
      delta(0, { type: "signature_delta", signature: "sig-" }),
      delta(0, { type: "signature_delta", signature: "abc" }),
      blockStop(0),
      blockStart(1, { type: "text", text: "", citations: null }),
      delta(1, { type: "text_delta", text: "Reading" }),
      delta(1, { type: "text_delta", text: " it." }),
      blockStop(1),
      blockStart(2, { type: "tool_use", id: "toolu_1", name: "read", input: {}, caller: { type: "direct" } }),
      delta(2, { type: "input_json_delta", partial_json: "" }),
      delta(2, { type: "input_json_delta", partial_json: '{"pa' }),
      delta(2, { type: "input_json_delta", partial_json: 'th":"a.txt",' }),
      delta(2, { type: "input_json_delta", partial_json: '"lines":[1,2]}' }),
      blockStop(2),
      messageDelta("tool_use"),
      messageStop,
    ]);
    const toolCall = { type: "toolCall", id: "toolu_1", name: "read", arguments: { path: "a.txt", lines: [1, 2] } };
    expect(deltas).toEqual([
      { type: "thinking_start", contentIndex: 0 },
      { type: "thinking_delta", contentIndex: 0, delta: "Let me " },
      { type: "thinking_delta", contentIndex: 0, delta: "think." },
      { type: "thinking_end", contentIndex: 0, content: "Let me think.", thinkingSignature: "sig-abc" },
      { type: "text_start", contentIndex: 1 },
      { type: "text_delta", contentIndex: 1, delta: "Reading" },
      { type: "text_delta", contentIndex: 1, delta: " it." },
      { type: "text_end", contentIndex: 1, content: "Reading it." },
      { type: "toolcall_start", contentIndex: 2, id: "toolu_1", name: "read" },
      { type: "toolcall_delta", contentIndex: 2, delta: "" },
      { type: "toolcall_delta", contentIndex: 2, delta: '{"pa' },
      { type: "toolcall_delta", contentIndex: 2, delta: 'th":"a.txt",' },
      { type: "toolcall_delta", contentIndex: 2, delta: '"lines":[1,2]}' },
      { type: "toolcall_end", contentIndex: 2, toolCall },
    ]);
    const finished = state.finish();
    expect(finished).toEqual({
      type: "done",
      reason: "toolUse",
      message: {
        ...base,
        responseId: "msg_1",
        content: [
          { type: "thinking", thinking: "Let me think.", thinkingSignature: "sig-abc" },
          { type: "text", text: "Reading it." },
          toolCall,
        ],
        usage: usageOf(100, 50, 20, 10),
        stopReason: "toolUse",
      },
    });
  });

  it("takes usage from message_start and lets message_delta override the counters it reports non-null", () => {
    const state = newState();
    applyAll(state, [messageStart()]);
    expect(state.snapshot().usage).toMatchObject({
      input: 100,
      output: 1,
      cacheRead: 20,
      cacheWrite: 10,
      totalTokens: 131,
    });
    applyAll(state, [messageDelta("end_turn", { output_tokens: 50, cache_read_input_tokens: 30 }), messageStop]);
    const finished = state.finish();
    expect(finished.type).toBe("done");
    const usage = finished.type === "done" ? finished.message.usage : emptyUsage();
    expect([usage.input, usage.output, usage.cacheRead, usage.cacheWrite, usage.totalTokens]).toEqual([
      100, 50, 30, 10, 190,
    ]);
    // claude-sonnet-5: $3 in, $15 out, $0.30 cache read, $3.75 cache write per MTok
    expect(usage.cost.input).toBeCloseTo(0.0003, 12);
    expect(usage.cost.output).toBeCloseTo(0.00075, 12);
    expect(usage.cost.cacheRead).toBeCloseTo(0.000009, 12);
    expect(usage.cost.cacheWrite).toBeCloseTo(0.0000375, 12);
    expect(usage.cost.total).toBeCloseTo(0.0010965, 12);
  });

  it("keeps a redacted thinking block with its opaque payload as the signature", () => {
    const state = newState();
    const deltas = applyAll(state, [
      messageStart(),
      blockStart(0, { type: "redacted_thinking", data: "opaque==" }),
      blockStop(0),
      messageDelta("end_turn"),
      messageStop,
    ]);
    expect(deltas).toEqual([
      { type: "thinking_start", contentIndex: 0 },
      { type: "thinking_end", contentIndex: 0, content: "[Reasoning redacted]", thinkingSignature: "opaque==" },
    ]);
    const finished = state.finish();
    expect(finished.type === "done" && finished.message.content).toEqual([
      { type: "thinking", thinking: "[Reasoning redacted]", thinkingSignature: "opaque==", redacted: true },
    ]);
  });

  it("skips block kinds Fleet does not request and numbers the others densely", () => {
    const state = newState();
    const deltas = applyAll(state, [
      messageStart(),
      blockStart(0, { type: "server_tool_use", id: "srv_1", name: "web_search", input: {} }),
      delta(0, { type: "input_json_delta", partial_json: "{}" }),
      blockStop(0),
      blockStart(1, { type: "text", text: "" }),
      delta(1, { type: "text_delta", text: "hi" }),
      delta(1, { type: "citations_delta", citation: {} }),
      blockStop(1),
    ]);
    expect(deltas).toEqual([
      { type: "text_start", contentIndex: 0 },
      { type: "text_delta", contentIndex: 0, delta: "hi" },
      { type: "text_end", contentIndex: 0, content: "hi" },
    ]);
  });

  it("gives {} for unparseable tool input and uses a non-streamed input when no delta came", () => {
    const state = newState();
    const deltas = applyAll(state, [
      messageStart(),
      blockStart(0, { type: "tool_use", id: "t1", name: "write", input: {} }),
      delta(0, { type: "input_json_delta", partial_json: '{"text":"cut by max_tok' }),
      blockStop(0),
      blockStart(1, { type: "tool_use", id: "t2", name: "read", input: { path: "b" } }),
      blockStop(1),
    ]);
    expect(deltas.filter((d) => d.type === "toolcall_end")).toEqual([
      { type: "toolcall_end", contentIndex: 0, toolCall: { type: "toolCall", id: "t1", name: "write", arguments: {} } },
      {
        type: "toolcall_end",
        contentIndex: 1,
        toolCall: { type: "toolCall", id: "t2", name: "read", arguments: { path: "b" } },
      },
    ]);
  });

  it("maps max_tokens to length", () => {
    const state = newState();
    applyAll(state, [messageStart(), messageDelta("max_tokens"), messageStop]);
    expect(state.finish()).toMatchObject({ type: "done", reason: "length", message: { stopReason: "length" } });
  });

  it("ends in error, content kept, for a stop reason Fleet does not accept", () => {
    const state = newState();
    applyAll(state, [
      messageStart(),
      blockStart(0, { type: "text", text: "" }),
      delta(0, { type: "text_delta", text: "I can't" }),
      blockStop(0),
      messageDelta("refusal"),
      messageStop,
    ]);
    const finished = state.finish();
    expect(finished).toMatchObject({
      type: "error",
      reason: "error",
      error: {
        content: [{ type: "text", text: "I can't" }],
        stopReason: "error",
        errorMessage: 'Anthropic stopped with stop_reason "refusal": the model refused to continue (refusal)',
      },
    });
  });

  it("ends in error when the stream stopped before message_stop", () => {
    const state = newState();
    applyAll(state, [messageStart(), messageDelta("end_turn")]);
    expect(state.finish()).toMatchObject({
      type: "error",
      reason: "error",
      error: { stopReason: "error", errorMessage: "Anthropic stream ended before message_stop" },
    });
  });

  it("fails as aborted keeping the partial content, open blocks included", () => {
    const state = newState();
    applyAll(state, [
      messageStart(),
      blockStart(0, { type: "text", text: "" }),
      delta(0, { type: "text_delta", text: "Hello, wor" }),
    ]);
    expect(state.fail("aborted", "Request was aborted")).toEqual({
      type: "error",
      reason: "aborted",
      error: {
        ...base,
        responseId: "msg_1",
        content: [{ type: "text", text: "Hello, wor" }],
        usage: usageOf(100, 1, 20, 10),
        stopReason: "aborted",
        errorMessage: "Request was aborted",
      },
    });
  });

  it("hands out copies: later events do not change an earlier snapshot or tool call", () => {
    const state = newState();
    applyAll(state, [messageStart(), blockStart(0, { type: "text", text: "" })]);
    const snapshot = state.snapshot();
    applyAll(state, [delta(0, { type: "text_delta", text: "more" })]);
    expect(snapshot.content).toEqual([{ type: "text", text: "" }]);
  });
});
