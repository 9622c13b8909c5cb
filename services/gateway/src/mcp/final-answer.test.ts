import type { AgentMessage } from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import { decideFinalAnswer, parseModelArg } from "./final-answer.js";

const assistant = (content: unknown[], extra: Record<string, unknown> = {}) =>
  ({ role: "assistant", content, stopReason: "stop", timestamp: 1, ...extra }) as unknown as AgentMessage;
const user = { role: "user", content: "hi", timestamp: 1 } as unknown as AgentMessage;

describe("decideFinalAnswer", () => {
  it("is the text of the last assistant message, thinking and tool calls left out", () => {
    const messages = [
      user,
      assistant(
        [
          { type: "text", text: "first" },
          { type: "toolCall", id: "t", name: "ls", arguments: {} },
        ],
        {
          stopReason: "toolUse",
        },
      ),
      { role: "toolResult", toolCallId: "t", content: [], isError: false, timestamp: 1 } as unknown as AgentMessage,
      assistant([
        { type: "thinking", thinking: "hmm" },
        { type: "text", text: "two" },
        { type: "text", text: "parts" },
      ]),
    ];
    expect(decideFinalAnswer(messages)).toEqual({ text: "two\n\nparts", stopReason: "stop" });
  });

  it("keeps the stop reason and error of a failed run, and says none when there was no answer", () => {
    expect(decideFinalAnswer([user, assistant([], { stopReason: "error", errorMessage: "overloaded" })])).toEqual({
      text: "",
      stopReason: "error",
      errorMessage: "overloaded",
    });
    expect(decideFinalAnswer([user])).toEqual({ text: "", stopReason: "none" });
  });
});

describe("parseModelArg", () => {
  it("reads provider/modelId, or an Anthropic model id", () => {
    expect(parseModelArg("openai/gpt-5")).toEqual({ provider: "openai", modelId: "gpt-5" });
    expect(parseModelArg("claude-test")).toEqual({ provider: "anthropic", modelId: "claude-test" });
    expect(parseModelArg("openrouter/meta/llama")).toEqual({ provider: "openrouter", modelId: "meta/llama" });
  });
});
