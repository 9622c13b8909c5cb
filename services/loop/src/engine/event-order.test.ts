// Given a script, when a prompt runs, then exactly pi's event order (pi-semantics §2.2, §10b).
import { describe, expect, it } from "vitest";
import { echoTool, T0, testEngine, trace } from "./testing/harness.js";

const usage = {
  input: 1,
  output: 2,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 3,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

describe("event order", () => {
  it("plain prompt: exact events with ids, entries, run id and deltas", async () => {
    const { engine, rec } = testEngine({ steps: [{ text: "Hello", usage }], init: { leafId: "root" } });
    const result = await engine.prompt("hi");

    const userMessage = { role: "user", content: [{ type: "text", text: "hi" }], timestamp: T0 };
    const assistant = {
      role: "assistant",
      content: [{ type: "text", text: "Hello" }],
      api: "scripted",
      provider: "scripted",
      model: "scripted-1",
      usage,
      stopReason: "stop",
      timestamp: T0,
    };
    const partial = { ...assistant, content: [], usage };
    expect(rec.events).toEqual([
      { id: "e2", runId: "e1", body: { type: "agent_start" } },
      { id: "e3", runId: "e1", body: { type: "turn_start" } },
      { id: "e4", runId: "e1", body: { type: "message_start", message: userMessage } },
      {
        id: "e5",
        runId: "e1",
        body: { type: "message_end", message: userMessage, entry: { id: "e5", parentId: "root" } },
      },
      { id: "e6", runId: "e1", body: { type: "message_start", message: partial } },
      { id: "e7", runId: "e1", body: { type: "message_update", deltas: [{ type: "text_start", contentIndex: 0 }] } },
      {
        id: "e8",
        runId: "e1",
        body: { type: "message_update", deltas: [{ type: "text_delta", contentIndex: 0, delta: "Hello" }] },
      },
      {
        id: "e9",
        runId: "e1",
        body: { type: "message_update", deltas: [{ type: "text_end", contentIndex: 0, content: "Hello" }] },
      },
      {
        id: "e10",
        runId: "e1",
        body: { type: "message_end", message: assistant, entry: { id: "e10", parentId: "e5" } },
      },
      { id: "e11", runId: "e1", body: { type: "turn_end", message: assistant, toolResults: [] } },
      { id: "e12", runId: "e1", body: { type: "agent_end", messages: [userMessage, assistant] } },
    ]);
    expect(result).toEqual({ status: "completed", runId: "e1", messages: [userMessage, assistant] });
    expect(engine.state.leafId).toBe("e10");
    expect(engine.state.messages).toEqual([userMessage, assistant]);
    expect(engine.state.isStreaming).toBe(false);
  });

  it("message_update is emitted for the assistant only, one per delta, thinking and tool calls included", async () => {
    const { engine, rec } = testEngine({
      tools: [echoTool],
      handlers: { echo: () => ({ content: [{ type: "text", text: "ok" }] }) },
      steps: [
        {
          content: [
            { type: "thinking", thinking: "hmm", thinkingSignature: "sig" },
            { type: "toolCall", id: "t1", name: "echo", arguments: { text: "x" } },
          ],
        },
        { text: "done" },
      ],
      chunkChars: 2,
    });
    await engine.prompt("go");
    expect(trace(rec.events, { updates: true })).toEqual([
      "agent_start",
      "turn_start",
      "message_start:user(go)",
      "message_end:user(go)",
      "message_start:assistant(…)",
      "message_update:thinking_start",
      "message_update:thinking_delta",
      "message_update:thinking_delta",
      "message_update:thinking_end",
      "message_update:toolcall_start",
      ...Array(6).fill("message_update:toolcall_delta"),
      "message_update:toolcall_end",
      "message_end:assistant(toolUse)",
      "tool_execution_start:t1",
      "tool_execution_end:t1",
      "message_start:toolResult(t1)",
      "message_end:toolResult(t1)",
      "turn_end[t1]",
      "turn_start",
      "message_start:assistant(…)",
      "message_update:text_start",
      "message_update:text_delta",
      "message_update:text_delta",
      "message_update:text_end",
      "message_end:assistant(stop)",
      "turn_end[]",
      "agent_end(4)",
    ]);
    const thinkingEnd = rec.events.find(
      (e) => e.body.type === "message_update" && e.body.deltas[0]?.type === "thinking_end",
    );
    expect(thinkingEnd?.body).toEqual({
      type: "message_update",
      deltas: [{ type: "thinking_end", contentIndex: 0, content: "hmm", thinkingSignature: "sig" }],
    });
  });

  it("a stream that ends before start gets message_start and message_end back to back", async () => {
    const { engine, rec } = testEngine({});
    await engine.prompt("hi");
    expect(trace(rec.events)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:user(hi)",
      "message_end:user(hi)",
      "message_start:assistant(…)",
      "message_end:assistant(error)",
      "turn_end[]",
      "agent_end(2)",
    ]);
    expect(engine.state.errorMessage).toBe("No more scripted responses");
  });

  it("emits no events for messages already in context; agent_end of continue() excludes them", async () => {
    const prior = { role: "user" as const, content: "earlier", timestamp: 1 };
    const { engine, rec } = testEngine({ steps: [{ text: "again" }], init: { messages: [prior] } });
    const result = await engine.continue();
    expect(trace(rec.events)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:assistant(…)",
      "message_end:assistant(stop)",
      "turn_end[]",
      "agent_end(1)",
    ]);
    expect(result.status === "completed" && result.messages.map((m) => m.role)).toEqual(["assistant"]);
  });

  it("the LLM request carries system prompt, converted messages, active tools, model and thinking level", async () => {
    const { engine, provider } = testEngine({
      steps: [{ text: "ok" }],
      tools: [echoTool, { ...echoTool, name: "hidden" }],
      config: { activeTools: ["echo"], thinkingLevel: "high" },
      init: { messages: [{ role: "custom", customType: "note", content: "n", display: true, timestamp: 1 }] },
    });
    await engine.prompt("hi");
    const request = provider.requests[0];
    expect(request?.context.systemPrompt).toBe("You are a test.");
    expect(request?.context.messages.map((m) => m.role)).toEqual(["user"]);
    expect(request?.context.tools.map((t) => t.name)).toEqual(["echo"]);
    expect(request?.options).toEqual({ model: { provider: "scripted", modelId: "scripted-1" }, thinkingLevel: "high" });
  });
});
