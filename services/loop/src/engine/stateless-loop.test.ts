// The stateless loop (pi's agentLoop / agentLoopContinue) used directly with ports.
import { describe, expect, it } from "vitest";
import { createInProcessExecutor } from "./in-process-tools.js";
import { agentLoop, agentLoopContinue } from "./run-agent-loop.js";
import { createScriptedProvider } from "./scripted-provider.js";
import { echoTool, recorder, sequentialIds, T0, trace, user } from "./testing/harness.js";
import type { EnginePorts, LoopConfig } from "./types.js";

function ports(steps: Parameters<typeof createScriptedProvider>[0]["steps"]) {
  const rec = recorder();
  const provider = createScriptedProvider({ steps, now: () => T0 });
  const p: EnginePorts = {
    streamFn: provider.streamFn,
    executeTool: createInProcessExecutor({
      echo: (a) => ({ content: [{ type: "text", text: String((a as { text: string }).text) }] }),
    }),
    emit: rec.emit,
    now: () => T0,
    newId: sequentialIds(),
  };
  return { rec, ports: p };
}
const config: LoopConfig = { model: { provider: "scripted", modelId: "m" }, thinkingLevel: "off" };

describe("stateless loop", () => {
  it("agentLoop runs prompts against a context it does not modify, chaining entries from the given leaf", async () => {
    const { rec, ports: p } = ports([
      { content: [{ type: "toolCall", id: "t1", name: "echo", arguments: { text: "x" } }] },
      { text: "ok" },
    ]);
    const context = { systemPrompt: "s", messages: [user("before")], tools: [echoTool] };
    const result = await agentLoop([user("go")], context, config, p, { leafId: "L", runId: "R" });
    expect(context.messages).toHaveLength(1);
    expect(result.runId).toBe("R");
    expect(result.messages.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant"]);
    const entries = rec.events.flatMap((e) => ("entry" in e.body ? [e.body.entry] : []));
    expect(entries.map((e) => e.parentId)).toEqual(["L", entries[0]?.id, entries[1]?.id, entries[2]?.id]);
    expect(result.leafId).toBe(entries[3]?.id);
    expect(rec.events.every((e) => e.runId === "R")).toBe(true);
  });

  it("agentLoopContinue throws pi's texts for an empty context or an assistant tail", async () => {
    const { ports: p } = ports([]);
    await expect(agentLoopContinue({ systemPrompt: "", messages: [], tools: [] }, config, p)).rejects.toThrow(
      "Cannot continue: no messages in context",
    );
    const tail = {
      role: "assistant" as const,
      content: [],
      api: "a",
      provider: "p",
      model: "m",
      usage: zero(),
      stopReason: "stop" as const,
      timestamp: 1,
    };
    await expect(agentLoopContinue({ systemPrompt: "", messages: [tail], tools: [] }, config, p)).rejects.toThrow(
      "Cannot continue from message role: assistant",
    );
  });

  it("agentLoopContinue polls steering first and returns only the new messages", async () => {
    const { rec, ports: p } = ports([{ text: "a" }]);
    let polls = 0;
    const result = await agentLoopContinue(
      { systemPrompt: "", messages: [user("q")], tools: [] },
      {
        ...config,
        getSteeringMessages: () => (polls++ === 0 ? [user("S")] : []),
      },
      p,
    );
    expect(trace(rec.events)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:user(S)",
      "message_end:user(S)",
      "message_start:assistant(…)",
      "message_end:assistant(stop)",
      "turn_end[]",
      "agent_end(2)",
    ]);
    expect(result.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
  });
});

function zero() {
  return {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
}
