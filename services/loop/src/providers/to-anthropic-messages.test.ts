import { type AssistantMessage, emptyUsage, type ToolResultMessage } from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import { toAnthropicMessages, toAnthropicToolId } from "./to-anthropic-messages.js";

const CACHE = { type: "ephemeral" };
const PNG = { type: "image" as const, data: "iVBORw0KGgo=", mimeType: "image/png" };

const assistant = (content: AssistantMessage["content"]): AssistantMessage => ({
  role: "assistant",
  content,
  api: "anthropic-messages",
  provider: "anthropic",
  model: "claude-sonnet-5",
  usage: emptyUsage(),
  stopReason: "toolUse",
  timestamp: 2,
});
const toolResult = (toolCallId: string, content: ToolResultMessage["content"], isError = false): ToolResultMessage => ({
  role: "toolResult",
  toolCallId,
  toolName: "read",
  content,
  isError,
  timestamp: 3,
});

describe("providers / toAnthropicMessages", () => {
  it("sends a user string as is and marks the last user turn for caching", () => {
    expect(
      toAnthropicMessages([
        { role: "user", content: "first", timestamp: 1 },
        assistant([{ type: "text", text: "reply" }]),
        { role: "user", content: "second", timestamp: 3 },
      ]),
    ).toEqual([
      { role: "user", content: "first" },
      { role: "assistant", content: [{ type: "text", text: "reply" }] },
      { role: "user", content: [{ type: "text", text: "second", cache_control: CACHE }] },
    ]);
  });

  it("converts user text and images to blocks, dropping blank text and empty messages", () => {
    expect(
      toAnthropicMessages([
        { role: "user", content: "   ", timestamp: 1 },
        { role: "user", content: [{ type: "text", text: "" }], timestamp: 1 },
        {
          role: "user",
          content: [{ type: "text", text: "what is this?" }, { type: "text", text: " " }, PNG],
          timestamp: 1,
        },
      ]),
    ).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "what is this?" },
          {
            type: "image",
            source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" },
            cache_control: CACHE,
          },
        ],
      },
    ]);
  });

  it("converts assistant text, signed/unsigned/redacted thinking and tool calls", () => {
    expect(
      toAnthropicMessages([
        assistant([
          { type: "thinking", thinking: "let me think", thinkingSignature: "sig-1" },
          { type: "thinking", thinking: "[Reasoning redacted]", thinkingSignature: "opaque", redacted: true },
          { type: "thinking", thinking: "unsigned (interrupted)" },
          { type: "thinking", thinking: "" },
          { type: "text", text: "" },
          { type: "text", text: "I'll read it" },
          { type: "toolCall", id: "call|1.x", name: "read", arguments: { path: "a.txt" } },
        ]),
      ]),
    ).toEqual([
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "let me think", signature: "sig-1" },
          { type: "redacted_thinking", data: "opaque" },
          { type: "text", text: "unsigned (interrupted)" },
          { type: "text", text: "I'll read it" },
          { type: "tool_use", id: "call_1_x", name: "read", input: { path: "a.txt" } },
        ],
      },
    ]);
  });

  it("drops an assistant message with nothing to send", () => {
    expect(toAnthropicMessages([assistant([{ type: "text", text: " " }])])).toEqual([]);
  });

  it("merges consecutive tool results into one user message, with is_error, images and cache_control", () => {
    expect(
      toAnthropicMessages([
        assistant([
          { type: "toolCall", id: "t1", name: "read", arguments: {} },
          { type: "toolCall", id: "t2", name: "shot", arguments: {} },
          { type: "toolCall", id: "t3", name: "fail", arguments: {} },
        ]),
        toolResult("t1", [{ type: "text", text: "contents" }]),
        toolResult("t2", [{ type: "text", text: "screenshot:" }, PNG]),
        toolResult("t3", [{ type: "text", text: "No result provided" }], true),
      ]),
    ).toEqual([
      {
        role: "assistant",
        content: [
          { type: "tool_use", id: "t1", name: "read", input: {} },
          { type: "tool_use", id: "t2", name: "shot", input: {} },
          { type: "tool_use", id: "t3", name: "fail", input: {} },
        ],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "t1", content: [{ type: "text", text: "contents" }], is_error: false },
          {
            type: "tool_result",
            tool_use_id: "t2",
            content: [
              { type: "text", text: "screenshot:" },
              { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
            ],
            is_error: false,
          },
          {
            type: "tool_result",
            tool_use_id: "t3",
            content: [{ type: "text", text: "No result provided" }],
            is_error: true,
            cache_control: CACHE,
          },
        ],
      },
    ]);
  });

  it("keeps tool results separated by a user message in separate user messages; only the last is cached", () => {
    const converted = toAnthropicMessages([
      assistant([{ type: "toolCall", id: "t1", name: "read", arguments: {} }]),
      toolResult("t1", []),
      { role: "user", content: "and now?", timestamp: 4 },
    ]);
    expect(converted).toEqual([
      { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "read", input: {} }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", is_error: false }] },
      { role: "user", content: [{ type: "text", text: "and now?", cache_control: CACHE }] },
    ]);
  });

  it("caches the last user turn even when an assistant message follows it", () => {
    expect(
      toAnthropicMessages([{ role: "user", content: "q", timestamp: 1 }, assistant([{ type: "text", text: "a" }])]),
    ).toEqual([
      { role: "user", content: [{ type: "text", text: "q", cache_control: CACHE }] },
      { role: "assistant", content: [{ type: "text", text: "a" }] },
    ]);
  });

  it("normalises tool ids to the API's pattern and length", () => {
    expect(toAnthropicToolId("toolu_01ABC-def")).toBe("toolu_01ABC-def");
    expect(toAnthropicToolId("fc_1|resp:2")).toBe("fc_1_resp_2");
    expect(toAnthropicToolId("x".repeat(100))).toBe("x".repeat(64));
  });
});
