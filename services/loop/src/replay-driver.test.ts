// The recorded mode's shell: which recorded result a replayed call gets, by its rank among the
// replay's own calls with the same name and arguments (copied entries do not count).
import { foldSessionEvents, NO_RECORDED_RESULT, type ReplayRecord } from "@fleet/protocol";
import { assistantMessage, CONFIG, createLogBuilder, textOf, toolCall, userMessage } from "@fleet/protocol/testing";
import { describe, expect, it } from "vitest";
import { recordedToolResult } from "./replay-driver.js";

const record = (toolsMode: ReplayRecord["toolsMode"]): ReplayRecord => ({
  sessionId: "src",
  fromEntry: "e-src",
  kept: 2,
  toEntry: "e-leaf",
  overrides: {},
  toolsMode,
  turns: [userMessage("go")],
  recorded: [
    { toolName: "read", args: { path: "a" }, content: [textOf("first")], isError: false },
    { toolName: "read", args: { path: "a" }, content: [textOf("second")], isError: false },
  ],
});

/** A replay session: two copied entries (one with a read of `a`), then two replayed reads of `a`. */
function replayState(toolsMode: ReplayRecord["toolsMode"]) {
  const b = createLogBuilder(4, "r-1");
  b.add({ type: "session_created", config: CONFIG, replayOf: record(toolsMode) });
  b.add({ type: "message_end", message: userMessage("old") });
  b.add({ type: "message_end", message: assistantMessage([toolCall("c0", "read", { path: "a" })]) });
  b.add({ type: "message_end", message: userMessage("go") });
  b.add({ type: "message_end", message: assistantMessage([toolCall("c1", "read", { path: "a" })]) });
  b.add({
    type: "message_end",
    message: assistantMessage([toolCall("c2", "read", { path: "a" }), toolCall("c3", "read", { path: "b" })]),
  });
  return foldSessionEvents(b.events);
}

describe("replay driver / recorded tool results", () => {
  it("gives the n-th replayed call with a name and arguments the n-th recorded result", () => {
    const state = replayState("recorded");
    expect(recordedToolResult(state, { toolCallId: "c1", toolName: "read", args: { path: "a" } })).toEqual({
      content: [textOf("first")],
      isError: false,
    });
    expect(recordedToolResult(state, { toolCallId: "c2", toolName: "read", args: { path: "a" } })).toEqual({
      content: [textOf("second")],
      isError: false,
    });
  });

  it("answers a call the source never made with an error result, and runs nothing in live mode", () => {
    expect(
      recordedToolResult(replayState("recorded"), { toolCallId: "c3", toolName: "read", args: { path: "b" } }),
    ).toEqual({
      content: [textOf(NO_RECORDED_RESULT("read"))],
      isError: true,
    });
    expect(
      recordedToolResult(replayState("live"), { toolCallId: "c1", toolName: "read", args: { path: "a" } }),
    ).toBeUndefined();
    const plain = createLogBuilder(5);
    plain.add({ type: "session_created", config: CONFIG });
    expect(
      recordedToolResult(foldSessionEvents(plain.events), { toolCallId: "x", toolName: "read", args: {} }),
    ).toBeUndefined();
  });
});
