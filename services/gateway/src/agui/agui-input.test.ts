import type { RunAgentInput } from "@ag-ui/core";
import { describe, expect, it } from "vitest";
import { AguiRunInput, commandsOfInput } from "./agui-input.js";

const input = (over: Partial<RunAgentInput>): RunAgentInput =>
  AguiRunInput.parse({ threadId: "t-1", runId: "r-1", messages: [], ...over }) as unknown as RunAgentInput;

describe("gateway / AG-UI input", () => {
  it("validates the thread as a session id and the run id as part of a command id", () => {
    expect(AguiRunInput.safeParse({ threadId: "t.1", runId: "r", messages: [] }).success).toBe(false);
    expect(AguiRunInput.safeParse({ threadId: "t", runId: "r\n", messages: [] }).success).toBe(false);
    expect(AguiRunInput.safeParse({ threadId: "t", runId: "r".repeat(101), messages: [] }).success).toBe(false);
    // AG-UI's own objects are open: fields this version does not know are kept, not refused.
    const parsed = AguiRunInput.parse({ threadId: "t", runId: "r", messages: [], extra: 1 });
    expect(parsed).toMatchObject({ tools: [], context: [], extra: 1 });
  });

  it("the last user message is the prompt: its text parts, one per line, and inline images", () => {
    const text = input({ messages: [{ id: "u1", role: "user", content: "hello" }] });
    expect(commandsOfInput(text)).toEqual([{ type: "prompt", text: "hello" }]);
    const parts = input({
      messages: [
        { id: "a0", role: "assistant", content: "earlier" },
        {
          id: "u2",
          role: "user",
          content: [
            { type: "text", text: "look" },
            { type: "image", source: { type: "data", value: "aGk=", mimeType: "image/png" } },
            { type: "text", text: "here" },
          ],
        },
      ],
    });
    expect(commandsOfInput(parts)).toEqual([
      { type: "prompt", text: "look\nhere", images: [{ type: "image", data: "aGk=", mimeType: "image/png" }] },
    ]);
    const url = input({
      messages: [{ id: "u3", role: "user", content: [{ type: "image", source: { type: "url", value: "https://x" } }] }],
    });
    expect(commandsOfInput(url)).toMatchObject({ status: 400, code: "invalid" });
    const notUser = input({ messages: [{ id: "a1", role: "assistant", content: "hi" }] });
    expect(commandsOfInput(notUser)).toMatchObject({ status: 400, code: "invalid" });
  });

  it("resume entries are decisions: approve, deny with a reason, cancel; a bad payload or id is invalid", () => {
    const resumed = input({
      messages: [{ id: "u1", role: "user", content: "ignored on resume" }],
      resume: [
        { interruptId: "toolu_1", status: "resolved", payload: { approved: true } },
        { interruptId: "toolu_2", status: "resolved", payload: { approved: false, reason: "not there" } },
        { interruptId: "toolu_3", status: "cancelled" },
      ],
    });
    expect(commandsOfInput(resumed)).toEqual([
      { type: "approve_tool_call", toolCallId: "toolu_1" },
      { type: "deny_tool_call", toolCallId: "toolu_2", reason: "not there" },
      { type: "deny_tool_call", toolCallId: "toolu_3", reason: "Interrupt cancelled" },
    ]);
    const badPayload = input({ resume: [{ interruptId: "toolu_1", status: "resolved", payload: "yes" }] });
    expect(commandsOfInput(badPayload)).toMatchObject({ status: 400, code: "invalid" });
    const badId = input({ resume: [{ interruptId: "a.b", status: "resolved", payload: { approved: true } }] });
    expect(commandsOfInput(badId)).toMatchObject({ status: 400, code: "invalid" });
  });
});
