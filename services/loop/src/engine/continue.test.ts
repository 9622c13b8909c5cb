// continue(): pi's decision table and exact error texts (pi-semantics §3, §5.1).
import type { AssistantMessage } from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import { ENGINE_ERROR_TEXT } from "./session-engine.js";
import { deferred, testEngine, trace, user } from "./testing/harness.js";

const assistant: AssistantMessage = {
  role: "assistant",
  content: [{ type: "text", text: "earlier" }],
  api: "scripted",
  provider: "scripted",
  model: "scripted-1",
  usage: {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  },
  stopReason: "stop",
  timestamp: 1,
};

describe("continue()", () => {
  it("no messages → conflict 'No messages to continue from'", async () => {
    const { engine, rec } = testEngine({});
    expect(engine.checkContinue()).toEqual({
      status: "rejected",
      code: "conflict",
      reason: "No messages to continue from",
    });
    expect(await engine.continue()).toEqual({
      status: "rejected",
      code: "conflict",
      reason: ENGINE_ERROR_TEXT.noMessages,
    });
    expect(rec.events).toEqual([]);
  });

  it("assistant tail with empty queues → conflict 'Cannot continue from message role: assistant'", async () => {
    const { engine } = testEngine({ init: { messages: [user("q"), assistant] } });
    expect(await engine.continue()).toEqual({
      status: "rejected",
      code: "conflict",
      reason: "Cannot continue from message role: assistant",
    });
  });

  it("while running → busy with pi's texts, for prompt and continue", async () => {
    const gate = deferred();
    const { engine } = testEngine({
      steps: [
        async () => {
          await gate.promise;
          return { text: "late" };
        },
      ],
      init: { messages: [user("q")] },
    });
    const run = engine.prompt("hi");
    expect(await engine.continue()).toEqual({
      status: "rejected",
      code: "busy",
      reason: "Agent is already processing. Wait for completion before continuing.",
    });
    expect(await engine.prompt("again")).toEqual({
      status: "rejected",
      code: "busy",
      reason:
        "Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion.",
    });
    gate.resolve();
    expect((await run).status).toBe("completed");
  });

  it("user or toolResult or custom tail → continuation: no prompt events, initial steering poll", async () => {
    for (const tail of [
      user("q"),
      { role: "toolResult" as const, toolCallId: "t", toolName: "x", content: [], isError: false, timestamp: 1 },
      { role: "custom" as const, customType: "c", content: "c", display: true, timestamp: 1 },
    ]) {
      const { engine, rec } = testEngine({
        steps: [{ text: "a1" }, { text: "a2" }],
        init: { messages: [tail], queues: { steer: [user("S")], followUp: [], nextTurn: [] } },
      });
      await engine.continue();
      expect(trace(rec.events)).toEqual([
        "agent_start",
        "turn_start",
        "queue_update(s0,f0,n0)",
        "message_start:user(S)",
        "message_end:user(S)",
        "message_start:assistant(…)",
        "message_end:assistant(stop)",
        "turn_end[]",
        "agent_end(2)",
      ]);
    }
  });

  it("assistant tail + queued follow-up → run as a prompt (fixture: continue() with assistant tail)", async () => {
    const { engine, rec } = testEngine({
      steps: [{ text: "a" }],
      init: { messages: [user("q"), assistant], queues: { steer: [], followUp: [user("fu")], nextTurn: [] } },
    });
    const result = await engine.continue();
    expect(trace(rec.events)).toEqual([
      "agent_start",
      "turn_start",
      "queue_update(s0,f0,n0)",
      "message_start:user(fu)",
      "message_end:user(fu)",
      "message_start:assistant(…)",
      "message_end:assistant(stop)",
      "turn_end[]",
      "agent_end(2)",
    ]);
    expect(result.status === "completed" && result.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
  });

  it("assistant tail + steering keeps one-at-a-time semantics: the initial steering poll is skipped", async () => {
    const { engine, rec } = testEngine({
      steps: [{ text: "a1" }, { text: "a2" }, { error: "overloaded" }],
      init: {
        messages: [user("q"), assistant],
        queues: { steer: [user("S1"), user("S2")], followUp: [user("F1"), user("F2")], nextTurn: [] },
      },
    });
    await engine.continue();
    expect(trace(rec.events)).toEqual([
      "agent_start",
      "turn_start",
      "queue_update(s1,f2,n0)",
      "message_start:user(S1)",
      "message_end:user(S1)",
      "message_start:assistant(…)",
      "message_end:assistant(stop)",
      "turn_end[]",
      "turn_start",
      "queue_update(s0,f2,n0)",
      "message_start:user(S2)",
      "message_end:user(S2)",
      "message_start:assistant(…)",
      "message_end:assistant(stop)",
      "turn_end[]",
      "turn_start",
      "queue_update(s0,f1,n0)",
      "message_start:user(F1)",
      "message_end:user(F1)",
      "message_start:assistant(…)",
      "message_end:assistant(error)",
      "turn_end[]",
      "agent_end(6)",
    ]);
    // the LLM error ended the run with the remaining follow-up still queued
    expect(engine.state.queues.followUp).toEqual([user("F2")]);
    expect(engine.state.errorMessage).toBe("overloaded");
  });
});
