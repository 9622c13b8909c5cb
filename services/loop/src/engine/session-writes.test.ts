// Session writes: immediate when idle; during a run recorded as `pending_write` events and flushed
// FIFO at turn_end / agent_end (the flush reads them from the session's fold).
import type { AgentMessage } from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import { echoTool, T0, testEngine, trace } from "./testing/harness.js";

const custom = (text: string): AgentMessage => ({
  role: "custom",
  customType: "note",
  content: text,
  display: true,
  timestamp: 7,
});
const toolTurn = { content: [{ type: "toolCall" as const, id: "t1", name: "echo", arguments: { text: "x" } }] };
const okTool = { echo: () => ({ content: [{ type: "text" as const, text: "x" }] }) };

describe("session writes", () => {
  it("idle: appended at once, each an entry child of the leaf, no run id; state follows", async () => {
    const { engine, rec } = testEngine({ init: { leafId: "L0" } });
    expect(await engine.setModel({ provider: "anthropic", modelId: "claude" })).toBe("emitted");
    await engine.setThinkingLevel("high");
    await engine.setActiveTools(["echo"]);
    await engine.setLabel("L0", "start");
    await engine.setName("my session");
    await engine.appendCustom("ext", { a: 1 });
    await engine.appendMessage(custom("hello"));
    expect(rec.events).toEqual([
      {
        id: "e1",
        runId: undefined,
        body: { type: "model_change", provider: "anthropic", modelId: "claude", entry: { id: "e1", parentId: "L0" } },
      },
      {
        id: "e2",
        runId: undefined,
        body: { type: "thinking_level_change", thinkingLevel: "high", entry: { id: "e2", parentId: "e1" } },
      },
      {
        id: "e3",
        runId: undefined,
        body: { type: "active_tools_change", toolNames: ["echo"], entry: { id: "e3", parentId: "e2" } },
      },
      {
        id: "e4",
        runId: undefined,
        body: { type: "label", targetId: "L0", label: "start", entry: { id: "e4", parentId: "e3" } },
      },
      {
        id: "e5",
        runId: undefined,
        body: { type: "session_info", name: "my session", entry: { id: "e5", parentId: "e4" } },
      },
      {
        id: "e6",
        runId: undefined,
        body: { type: "custom", customType: "ext", data: { a: 1 }, entry: { id: "e6", parentId: "e5" } },
      },
      { id: "e7", runId: undefined, body: { type: "message_start", message: custom("hello") } },
      {
        id: "e8",
        runId: undefined,
        body: { type: "message_end", message: custom("hello"), entry: { id: "e8", parentId: "e6" } },
      },
    ]);
    expect(engine.state).toMatchObject({
      model: { provider: "anthropic", modelId: "claude" },
      thinkingLevel: "high",
      activeTools: ["echo"],
      leafId: "e8",
      // the context is built from the tree: a custom message entry is timestamped by its event
      messages: [{ ...custom("hello"), timestamp: T0 }],
    });
  });

  it("during a run: buffered, then flushed in FIFO order right after turn_end (harness fixture)", async () => {
    const contexts: number[] = [];
    const t = testEngine({
      tools: [echoTool],
      steps: [toolTurn, { text: "done" }],
      handlers: {
        echo: async () => {
          expect(await t.engine.setThinkingLevel("high")).toBe("buffered");
          expect(await t.engine.appendMessage(custom("mid-run"))).toBe("buffered");
          expect(t.engine.state.pendingWrites).toBe(2);
          return okTool.echo();
        },
      },
      hooks: {
        transformContext: async (messages) => {
          contexts.push(messages.length);
          return messages;
        },
      },
    });
    await t.engine.nextTurn({ role: "user", content: [{ type: "text", text: "NT" }], timestamp: 1 });
    await t.engine.prompt("hi");
    expect(trace(t.rec.events)).toEqual([
      "queue_update(s0,f0,n1)",
      "agent_start",
      "turn_start",
      "queue_update(s0,f0,n0)",
      "message_start:user(NT)",
      "message_end:user(NT)",
      "message_start:user(hi)",
      "message_end:user(hi)",
      "message_start:assistant(…)",
      "message_end:assistant(toolUse)",
      "tool_execution_start:t1",
      "pending_write(thinking_level_change)",
      "pending_write(message)",
      "tool_execution_end:t1",
      "message_start:toolResult(t1)",
      "message_end:toolResult(t1)",
      "turn_end[t1]",
      "thinking_level_change(high)",
      "message_start:custom(note)",
      "message_end:custom(note)",
      "turn_start",
      "message_start:assistant(…)",
      "message_end:assistant(stop)",
      "turn_end[]",
      "agent_end(5)",
    ]);
    // the next LLM call sees the flushed message (5 messages) and the new thinking level
    expect(contexts).toEqual([2, 5]);
    expect(t.provider.requests[1]?.options.thinkingLevel).toBe("high");
    expect(t.engine.state.messages.map((m) => m.role)).toEqual([
      "user",
      "user",
      "assistant",
      "toolResult",
      "custom",
      "assistant",
    ]);
    // flushed writes carry the run id and chain the leaf
    const level = t.rec.events.find((e) => e.body.type === "thinking_level_change");
    const toolResultEnd = t.rec.events.filter((e) => e.body.type === "message_end")[3];
    expect(level?.runId).toBe("e2");
    expect(level?.body).toMatchObject({ entry: { parentId: toolResultEnd?.id } });
    // each flushed event has the id its pending_write named, which settles it
    const pending = t.rec.events.find((e) => e.body.type === "pending_write")?.body;
    expect(pending).toMatchObject({ write: { type: "thinking_level_change" }, eventId: level?.id });
    expect(t.engine.state.pendingWrites).toBe(0);
  });

  it("writes after the last turn_end are flushed before agent_end; model and tool changes reach the next turn", async () => {
    const t = testEngine({
      tools: [echoTool, { ...echoTool, name: "other" }],
      steps: [toolTurn, { text: "done" }],
      hooks: {
        // after the last turn_end's flush: only the agent_end flush can carry it
        shouldStopAfterTurn: ({ toolResults }) => {
          if (toolResults.length === 0) void t.engine.setName("named late");
          return false;
        },
      },
      handlers: {
        echo: async () => {
          await t.engine.setModel({ provider: "p2", modelId: "m2" });
          await t.engine.setActiveTools(["other"]);
          return okTool.echo();
        },
      },
    });
    await t.engine.prompt("go");
    expect(trace(t.rec.events).slice(-10)).toEqual([
      "turn_end[t1]",
      "model_change(p2/m2)",
      "active_tools_change(other)",
      "turn_start",
      "message_start:assistant(…)",
      "message_end:assistant(stop)",
      "turn_end[]",
      "pending_write(session_info)",
      "session_info(named late)",
      "agent_end(4)",
    ]);
    expect(t.provider.requests[1]?.options.model).toEqual({ provider: "p2", modelId: "m2" });
    expect(t.provider.requests[1]?.context.tools.map((tool) => tool.name)).toEqual(["other"]);
  });

  it("a write made while agent_end is being emitted is flushed after the run, outside it", async () => {
    const t = testEngine({ steps: [{ text: "done" }] });
    t.rec.listen(async (e) => {
      if (e.body.type === "agent_end") expect(await t.engine.setLabel("x", null)).toBe("buffered");
    });
    await t.engine.prompt("go");
    const last = t.rec.events.at(-1);
    expect(last?.body).toMatchObject({ type: "label", targetId: "x", label: null });
    expect(last?.runId).toBeUndefined();
    expect(t.rec.events.at(-2)?.body.type).toBe("pending_write");
    expect(t.engine.state.pendingWrites).toBe(0);
  });
});
