// Loop hooks: transformContext → convertToLlm, shouldStopAfterTurn, prepareNextTurn, throwing hooks.
import type { ContextMessage, LlmMessage } from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import { echoTool, T0, testEngine, trace, user } from "./testing/harness.js";

const toolTurn = { content: [{ type: "toolCall" as const, id: "t1", name: "echo", arguments: { text: "x" } }] };
const echo = { echo: () => ({ content: [{ type: "text" as const, text: "x" }] }) };
const texts = (messages: readonly LlmMessage[]) =>
  messages.map((m) =>
    m.role === "user" && typeof m.content !== "string" && m.content[0]?.type === "text" ? m.content[0].text : m.role,
  );

describe("hooks", () => {
  it("transformContext runs before convertToLlm on every call; its result is used for that request only", async () => {
    const calls: string[] = [];
    const { engine, provider } = testEngine({
      tools: [echoTool],
      handlers: echo,
      steps: [toolTurn, { text: "done" }],
      hooks: {
        transformContext: async (messages) => {
          calls.push(`transform(${messages.length})`);
          return [user("injected"), ...messages];
        },
        convertToLlm: (messages: ContextMessage[]) => {
          calls.push(`convert(${messages.length})`);
          return messages.filter((m): m is LlmMessage => m.role !== "custom");
        },
      },
    });
    await engine.prompt("go");
    expect(calls).toEqual(["transform(1)", "convert(2)", "transform(3)", "convert(4)"]);
    expect(texts(provider.requests[1]?.context.messages ?? [])).toEqual(["injected", "go", "assistant", "toolResult"]);
    expect(engine.state.messages).toHaveLength(4);
  });

  it("shouldStopAfterTurn → agent_end right after turn_end, neither queue polled", async () => {
    const { engine, rec, provider } = testEngine({
      tools: [echoTool],
      handlers: echo,
      steps: [toolTurn, { text: "never" }],
      init: {
        queues: { steer: [user("S")], followUp: [user("F")], nextTurn: [] },
      },
      hooks: {
        shouldStopAfterTurn: ({ message, toolResults, newMessages }) =>
          message.stopReason === "toolUse" && toolResults.length === 1 && newMessages.length === 4,
      },
    });
    await engine.prompt("go");
    // the initial steering poll injected S into the first turn; nothing polled afterwards
    expect(trace(rec.events)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:user(go)",
      "message_end:user(go)",
      "queue_update(s0,f1,n0)",
      "message_start:user(S)",
      "message_end:user(S)",
      "message_start:assistant(…)",
      "message_end:assistant(toolUse)",
      "tool_execution_start:t1",
      "tool_execution_end:t1",
      "message_start:toolResult(t1)",
      "message_end:toolResult(t1)",
      "turn_end[t1]",
      "agent_end(4)",
    ]);
    expect(provider.requests).toHaveLength(1);
    expect(engine.state.queues.followUp).toEqual([user("F")]);
  });

  it("prepareNextTurn runs after every non-error turn_end, before shouldStopAfterTurn, and swaps model, thinking level and context", async () => {
    const order: string[] = [];
    const { engine, provider } = testEngine({
      tools: [echoTool],
      handlers: echo,
      steps: [toolTurn, { text: "done" }],
      hooks: {
        prepareNextTurn: ({ context }) => {
          order.push(`prepare(${context.messages.length})`);
          if (order.length > 1) return undefined;
          return {
            model: { provider: "other", modelId: "big" },
            thinkingLevel: "high",
            context: { ...context, systemPrompt: "swapped", messages: context.messages.slice(1) },
          };
        },
        shouldStopAfterTurn: ({ context }) => {
          order.push(`stop?(${context.messages.length},${context.systemPrompt})`);
          return false;
        },
      },
    });
    await engine.prompt("go");
    expect(order).toEqual(["prepare(3)", "stop?(2,swapped)", "prepare(3)", "stop?(3,swapped)"]);
    expect(provider.requests[1]?.options).toEqual({
      model: { provider: "other", modelId: "big" },
      thinkingLevel: "high",
    });
    expect(provider.requests[1]?.context.systemPrompt).toBe("swapped");
    expect(provider.requests[1]?.context.messages.map((m) => m.role)).toEqual(["assistant", "toolResult"]);
    // the run's own model changes are not session writes; the session's model follows its last
    // assistant message (pi's buildSessionContext), as any worker that loads the log sees it
    expect(engine.state.model).toEqual({ provider: "scripted", modelId: "big" });
  });

  it("prepareNextTurn is not called after an error turn", async () => {
    let calls = 0;
    const { engine } = testEngine({ steps: [{ error: "overloaded" }], hooks: { prepareNextTurn: () => void calls++ } });
    await engine.prompt("go");
    expect(calls).toBe(0);
  });

  for (const hook of ["transformContext", "convertToLlm", "shouldStopAfterTurn", "prepareNextTurn"] as const) {
    it(`${hook} that throws → pi 0.75 failure: message_start, message_end, turn_end, agent_end[failure]`, async () => {
      const boom = () => {
        throw new Error(`${hook} boom`);
      };
      const { engine, rec } = testEngine({ steps: [{ text: "hello" }], hooks: { [hook]: boom } });
      const result = await engine.prompt("go");
      const failure = {
        role: "assistant",
        content: [{ type: "text", text: "" }],
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
        stopReason: "error",
        errorMessage: `${hook} boom`,
        timestamp: T0,
      };
      expect(result).toEqual({ status: "completed", runId: "e1", messages: [failure] });
      const bodies = rec.events.map((e) => e.body);
      expect(bodies.slice(-4)).toEqual([
        { type: "message_start", message: failure },
        { type: "message_end", message: failure, entry: expect.objectContaining({}) },
        { type: "turn_end", message: failure, toolResults: [] },
        { type: "agent_end", messages: [failure] },
      ]);
      expect(engine.state.messages.at(-1)).toEqual(failure);
      expect(engine.state.errorMessage).toBe(`${hook} boom`);
      expect(engine.state.isStreaming).toBe(false);
    });
  }

  it("a streamFn that throws takes the failure path too (never an unhandled rejection)", async () => {
    const { engine, rec, ports } = testEngine({});
    ports.streamFn = () => {
      throw new Error("transport exploded");
    };
    const result = await engine.prompt("go");
    expect(trace(rec.events)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:user(go)",
      "message_end:user(go)",
      "message_start:assistant(…)",
      "message_end:assistant(error)",
      "turn_end[]",
      "agent_end(1)",
    ]);
    expect(result.status === "completed" && result.messages[0]).toMatchObject({ errorMessage: "transport exploded" });
  });
});
