import {
  type AssistantMessage,
  emptyUsage,
  type LlmMessage,
  type ToolResultMessage,
  type UserMessage,
} from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import { prepareReplayMessages } from "./prepare-replay-messages.js";

const TARGET = { provider: "anthropic", modelId: "claude-sonnet-5" };

const user = (text: string, timestamp = 1): UserMessage => ({ role: "user", content: text, timestamp });
const assistant = (
  content: AssistantMessage["content"],
  opts: Partial<Pick<AssistantMessage, "stopReason" | "model" | "provider" | "errorMessage" | "timestamp">> = {},
): AssistantMessage => ({
  role: "assistant",
  content,
  api: "anthropic-messages",
  provider: "anthropic",
  model: "claude-sonnet-5",
  usage: emptyUsage(),
  stopReason: "stop",
  timestamp: 2,
  ...opts,
});
const call = (id: string, name = "read") => ({ type: "toolCall" as const, id, name, arguments: { path: id } });
const result = (toolCallId: string, text: string, isError = false): ToolResultMessage => ({
  role: "toolResult",
  toolCallId,
  toolName: "read",
  content: [{ type: "text", text }],
  isError,
  timestamp: 3,
});
const noResult = (toolCallId: string, timestamp: number, toolName = "read"): ToolResultMessage => ({
  role: "toolResult",
  toolCallId,
  toolName,
  content: [{ type: "text", text: "No result provided" }],
  isError: true,
  timestamp,
});

describe("providers / prepareReplayMessages (pi-ai transformMessages)", () => {
  it("passes a well-formed conversation through unchanged", () => {
    const messages: LlmMessage[] = [
      user("hi"),
      assistant([{ type: "text", text: "calling" }, call("t1")], { stopReason: "toolUse" }),
      result("t1", "ok"),
      assistant([{ type: "text", text: "done" }]),
    ];
    expect(prepareReplayMessages(messages, TARGET)).toEqual(messages);
  });

  it("drops assistant messages that ended in error or aborted", () => {
    const messages: LlmMessage[] = [
      user("a"),
      assistant([{ type: "text", text: "partial" }], { stopReason: "aborted", errorMessage: "Request was aborted" }),
      user("b"),
      assistant([], { stopReason: "error", errorMessage: "529 overloaded_error: Overloaded" }),
      user("c"),
    ];
    expect(prepareReplayMessages(messages, TARGET)).toEqual([user("a"), user("b"), user("c")]);
  });

  it("synthesises 'No result provided' for tool calls a user message interrupted, before that message", () => {
    const messages: LlmMessage[] = [
      user("go"),
      assistant([call("t1"), call("t2", "write")], { stopReason: "toolUse", timestamp: 7 }),
      result("t2", "written"),
      user("stop that"),
    ];
    expect(prepareReplayMessages(messages, TARGET)).toEqual([
      messages[0],
      messages[1],
      result("t2", "written"),
      noResult("t1", 7),
      user("stop that"),
    ]);
  });

  it("synthesises results for tool calls left open at the end and before the next assistant message", () => {
    const messages: LlmMessage[] = [
      user("go"),
      assistant([call("t1")], { stopReason: "toolUse", timestamp: 5 }),
      assistant([call("t2", "write")], { stopReason: "toolUse", timestamp: 6 }),
    ];
    expect(prepareReplayMessages(messages, TARGET)).toEqual([
      messages[0],
      messages[1],
      noResult("t1", 5),
      messages[2],
      noResult("t2", 6, "write"),
    ]);
  });

  it("drops tool results that answer no call of the last kept assistant message, and repeated results", () => {
    const messages: LlmMessage[] = [
      user("go"),
      assistant([call("t1")], { stopReason: "error", errorMessage: "boom" }),
      result("t1", "orphan"),
      assistant([call("t2")], { stopReason: "toolUse" }),
      result("t2", "first"),
      result("t2", "again"),
    ];
    expect(prepareReplayMessages(messages, TARGET)).toEqual([messages[0], messages[3], result("t2", "first")]);
  });

  it("keeps thinking of the same model and turns another model's thinking into text", () => {
    const thinking = [
      { type: "thinking" as const, thinking: "hmm", thinkingSignature: "sig" },
      { type: "thinking" as const, thinking: "[Reasoning redacted]", thinkingSignature: "opaque", redacted: true },
      { type: "thinking" as const, thinking: "  " },
      { type: "text" as const, text: "answer" },
    ];
    const same = assistant(thinking);
    const foreign = assistant(thinking, { model: "claude-opus-4-1" });
    const otherProvider = assistant(thinking, { provider: "scripted" });
    expect(prepareReplayMessages([user("q"), same], TARGET)).toEqual([user("q"), same]);
    const downgraded = [
      { type: "text", text: "hmm" },
      { type: "text", text: "answer" },
    ];
    expect(prepareReplayMessages([user("q"), foreign, user("r"), otherProvider], TARGET)).toEqual([
      user("q"),
      { ...foreign, content: downgraded },
      user("r"),
      { ...otherProvider, content: downgraded },
    ]);
  });
});
