// The one tool-result step of the live run (the engine's batch) and the runtime core (`decideInput
// {tool_result}`): given a batch and a call's outcome, the events and toolResult messages it adds.
import { describe, expect, it } from "vitest";
import { type BatchCall, batchMessages, stepToolResult, type ToolExecutionOutcome } from "./tool-result.js";

const T = 1_700_000_000_000;
const ok = (text: string): ToolExecutionOutcome => ({ result: { content: [{ type: "text", text }] }, isError: false });
const call = (id: string, outcome?: ToolExecutionOutcome): BatchCall => ({
  call: { id, name: "ls" },
  outcome,
  message: undefined,
});
const types = (events: readonly { type: string }[]) => events.map((e) => e.type);

describe("stepToolResult", () => {
  it("parallel: a call that is not the batch's last ends alone", () => {
    const step = stepToolResult([call("a"), call("b"), call("c")], 1, ok("B"), "parallel", T);
    expect(types(step.events)).toEqual(["tool_execution_end"]);
    expect(step.events[0]).toMatchObject({ toolCallId: "b", result: { content: [{ text: "B" }] } });
    expect(step.messages).toEqual([]);
  });

  it("parallel: the last call's end is followed by every toolResult message, in source order", () => {
    const batch = [call("a", ok("A")), call("b"), call("c", ok("C"))];
    const step = stepToolResult(batch, 1, ok("B"), "parallel", T);
    expect(types(step.events)).toEqual([
      "tool_execution_end",
      "message_start",
      "message_end",
      "message_start",
      "message_end",
      "message_start",
      "message_end",
    ]);
    expect(step.messages.map((m) => [m.toolCallId, m.message.content])).toEqual([
      ["a", [{ type: "text", text: "A" }]],
      ["b", [{ type: "text", text: "B" }]],
      ["c", [{ type: "text", text: "C" }]],
    ]);
    expect(step.messages[0]?.message).toMatchObject({
      role: "toolResult",
      toolName: "ls",
      isError: false,
      timestamp: T,
    });
    // Pure: the batch is as it was.
    expect(batch[1]?.outcome).toBeUndefined();
  });

  it("parallel: a message already out is not sent again (a resumed batch)", () => {
    const first = stepToolResult([call("a", ok("A")), call("b")], 1, ok("B"), "parallel", T);
    const sent = first.messages[0]?.message;
    const resumed: BatchCall[] = [{ call: { id: "a", name: "ls" }, outcome: ok("A"), message: sent }, call("b")];
    const step = stepToolResult(resumed, 1, ok("B"), "parallel", T);
    expect(step.messages.map((m) => m.toolCallId)).toEqual(["b"]);
  });

  it("sequential: the call's end and its toolResult message at once, whatever else is pending", () => {
    const step = stepToolResult([call("a"), call("b")], 0, { ...ok("A"), isError: true }, "sequential", T);
    expect(types(step.events)).toEqual(["tool_execution_end", "message_start", "message_end"]);
    expect(step.messages.map((m) => [m.toolCallId, m.message.isError])).toEqual([["a", true]]);
  });
});

describe("batchMessages", () => {
  it("owes the messages of calls that ended without one, and nothing for calls with no outcome", () => {
    const step = batchMessages([call("a", ok("A")), call("b"), call("c", ok("C"))], T);
    expect(step.messages.map((m) => m.toolCallId)).toEqual(["a", "c"]);
    expect(types(step.events)).toEqual(["message_start", "message_end", "message_start", "message_end"]);
  });
});
