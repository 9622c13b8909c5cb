// Tool batches: preflight, parallel/sequential, completion vs source order, pi's error texts, hooks.
import { toolErrorText } from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import { deferred, echoTool, objectSchema, type Recorder, resultText, testEngine, trace } from "./testing/harness.js";
import type { ToolDefinition } from "./types.js";

const ok = (text: string) => ({ content: [{ type: "text" as const, text }] });
const call = (id: string, name = "echo", args: Record<string, unknown> = { text: id }) => ({
  type: "toolCall" as const,
  id,
  name,
  arguments: args,
});
const twoCalls = () => [{ content: [call("t1"), call("t2")] }, { text: "done" }];

/** An echo handler where t1 finishes only after t2's tool_execution_end went out. */
const slowT1FastT2 = (rec: Recorder) => {
  const t2Ended = deferred();
  rec.listen((e) => {
    if (e.body.type === "tool_execution_end" && e.body.toolCallId === "t2") t2Ended.resolve();
  });
  return {
    echo: async (args: unknown, _s: AbortSignal | undefined, onUpdate: (p: unknown) => void, id: string) => {
      onUpdate({ progress: id });
      if (id === "t1") await t2Ended.promise;
      return ok((args as { text: string }).text);
    },
  };
};

const head = [
  "agent_start",
  "turn_start",
  "message_start:user(go)",
  "message_end:user(go)",
  "message_start:assistant(…)",
];
const tail = ["turn_start", "message_start:assistant(…)", "message_end:assistant(stop)", "turn_end[]"];

describe("tool batches", () => {
  it("parallel (default): preflight first, tool_execution_end in completion order, results in source order", async () => {
    const { engine, rec } = testEngine({ tools: [echoTool], steps: twoCalls(), handlers: slowT1FastT2 });
    await engine.prompt("go");
    expect(trace(rec.events)).toEqual([
      ...head,
      "message_end:assistant(toolUse)",
      "tool_execution_start:t1",
      "tool_execution_start:t2",
      "tool_execution_update:t1",
      "tool_execution_update:t2",
      "tool_execution_end:t2",
      "tool_execution_end:t1",
      "message_start:toolResult(t1)",
      "message_end:toolResult(t1)",
      "message_start:toolResult(t2)",
      "message_end:toolResult(t2)",
      "turn_end[t1,t2]",
      ...tail,
      "agent_end(5)",
    ]);
    const update = rec.events.find((e) => e.body.type === "tool_execution_update");
    expect(update?.body).toEqual({
      type: "tool_execution_update",
      toolCallId: "t1",
      toolName: "echo",
      args: { text: "t1" },
      partialResult: { progress: "t1" },
    });
    const end = rec.events.find((e) => e.body.type === "tool_execution_end");
    expect(end?.body).toEqual({
      type: "tool_execution_end",
      toolCallId: "t2",
      toolName: "echo",
      result: { content: [{ type: "text", text: "t2" }] },
      isError: false,
    });
  });

  it("sequential by config: start, updates, end and toolResult per call", async () => {
    const { engine, rec } = testEngine({
      tools: [echoTool],
      steps: twoCalls(),
      config: { toolExecution: "sequential" },
      handlers: {
        echo: async (a, _s, onUpdate) => {
          onUpdate(1);
          return ok((a as { text: string }).text);
        },
      },
    });
    await engine.prompt("go");
    expect(trace(rec.events)).toEqual([
      ...head,
      "message_end:assistant(toolUse)",
      "tool_execution_start:t1",
      "tool_execution_update:t1",
      "tool_execution_end:t1",
      "message_start:toolResult(t1)",
      "message_end:toolResult(t1)",
      "tool_execution_start:t2",
      "tool_execution_update:t2",
      "tool_execution_end:t2",
      "message_start:toolResult(t2)",
      "message_end:toolResult(t2)",
      "turn_end[t1,t2]",
      ...tail,
      "agent_end(5)",
    ]);
  });

  it("one executionMode:'sequential' tool makes the whole batch sequential; unknown names do not", async () => {
    const serial: ToolDefinition = { ...echoTool, name: "serial", executionMode: "sequential" };
    const running: string[] = [];
    let overlap = false;
    const handler = async (_a: unknown, _s: AbortSignal | undefined, _u: unknown, id: string) => {
      if (running.length > 0) overlap = true;
      running.push(id);
      await Promise.resolve();
      running.pop();
      return ok(id);
    };
    const { engine, rec } = testEngine({
      tools: [echoTool, serial],
      handlers: { echo: handler, serial: handler },
      steps: [{ content: [call("t1"), call("t2", "serial"), call("t3")] }, { text: "done" }],
    });
    await engine.prompt("go");
    expect(overlap).toBe(false);
    expect(trace(rec.events).slice(6, 18)).toEqual([
      "tool_execution_start:t1",
      "tool_execution_end:t1",
      "message_start:toolResult(t1)",
      "message_end:toolResult(t1)",
      "tool_execution_start:t2",
      "tool_execution_end:t2",
      "message_start:toolResult(t2)",
      "message_end:toolResult(t2)",
      "tool_execution_start:t3",
      "tool_execution_end:t3",
      "message_start:toolResult(t3)",
      "message_end:toolResult(t3)",
    ]);

    const parallel = testEngine({
      tools: [echoTool],
      handlers: { echo: async (_a, _s, _u, id) => ok(id) },
      steps: [{ content: [call("t1"), call("t2", "unknown")] }, { text: "done" }],
    });
    await parallel.engine.prompt("go");
    expect(trace(parallel.rec.events).slice(6, 9)).toEqual([
      "tool_execution_start:t1",
      "tool_execution_start:t2",
      "tool_execution_end:t2(err)",
    ]);
  });

  it("throw, unknown tool, invalid args: preflight failures end at once, with pi's exact texts", async () => {
    const { engine, rec } = testEngine({
      tools: [echoTool],
      handlers: slowThrowing,
      steps: [
        { content: [call("t1"), call("t2", "nope"), call("t3", "echo", { text: 42, extra: { deep: [1] } })] },
        { text: "done" },
      ],
    });
    await engine.prompt("go");
    expect(trace(rec.events).slice(5, 17)).toEqual([
      "message_end:assistant(toolUse)",
      "tool_execution_start:t1",
      "tool_execution_start:t2",
      "tool_execution_end:t2(err)",
      "tool_execution_start:t3",
      "tool_execution_end:t3",
      "tool_execution_end:t1(err)",
      "message_start:toolResult(t1,err)",
      "message_end:toolResult(t1,err)",
      "message_start:toolResult(t2,err)",
      "message_end:toolResult(t2,err)",
      "message_start:toolResult(t3)",
    ]);
    expect(resultText(rec.events, "t1")).toBe("kaboom");
    expect(resultText(rec.events, "t2")).toBe("Tool nope not found");
    // coercion: 42 → "42" is valid for a string (pi coerces primitives), so t3 ran
    expect(resultText(rec.events, "t3")).toBe("42");
    const t1End = rec.events.find((e) => e.body.type === "tool_execution_end" && e.body.toolCallId === "t1");
    expect(t1End?.body).toMatchObject({
      result: { content: [{ type: "text", text: "kaboom" }], details: {} },
      isError: true,
    });
  });

  it("validation failure text: path, message, then the raw arguments pretty-printed", async () => {
    const strict: ToolDefinition = {
      name: "strict",
      description: "",
      parameters: objectSchema({ path: { type: "string" }, n: { type: "integer", minimum: 1 } }, ["path"]),
    };
    const { engine, rec } = testEngine({
      tools: [strict],
      handlers: { strict: () => ok("ran") },
      steps: [{ content: [call("t1", "strict", { n: "abc" })] }, { text: "done" }],
    });
    await engine.prompt("go");
    expect(resultText(rec.events, "t1")).toBe(
      'Validation failed for tool "strict":\n  - path: must have required properties path\n  - n: must be integer\n\nReceived arguments:\n{\n  "n": "abc"\n}',
    );
  });

  it("beforeToolCall blocks with its reason or pi's default text; it sees validated, coerced args", async () => {
    const seen: unknown[] = [];
    const counted: ToolDefinition = {
      ...echoTool,
      name: "count",
      parameters: objectSchema({ n: { type: "integer" } }),
    };
    const { engine, rec } = testEngine({
      tools: [echoTool, counted],
      handlers: slowT1FastT2,
      hooks: {
        beforeToolCall: ({ toolCall, args }) => {
          seen.push(args);
          if (toolCall.id === "t2") return { block: true };
          if (toolCall.id === "t3") return { block: true, reason: "not today" };
          return undefined;
        },
      },
      steps: [{ content: [call("t1"), call("t2"), call("t3", "count", { n: "7" })] }, { text: "done" }],
    });
    await engine.prompt("go");
    expect(trace(rec.events).slice(6, 13)).toEqual([
      "tool_execution_start:t1",
      "tool_execution_start:t2",
      "tool_execution_end:t2(err)",
      "tool_execution_start:t3",
      "tool_execution_end:t3(err)",
      "tool_execution_update:t1",
      "tool_execution_end:t1",
    ]);
    expect(resultText(rec.events, "t2")).toBe(toolErrorText.blocked);
    expect(resultText(rec.events, "t3")).toBe("not today");
    expect(seen).toEqual([{ text: "t1" }, { text: "t2" }, { n: 7 }]);
    const start = rec.events.find((e) => e.body.type === "tool_execution_start" && e.body.toolCallId === "t3");
    expect(start?.body).toMatchObject({ args: { n: "7" } });
  });

  it("arguments mutated by beforeToolCall run without re-validation", async () => {
    const received: unknown[] = [];
    const { engine } = testEngine({
      tools: [echoTool],
      handlers: {
        echo: (args) => {
          received.push(args);
          return ok("ran");
        },
      },
      hooks: {
        beforeToolCall: ({ args }) => {
          (args as Record<string, unknown>).text = { not: "a string" };
          return undefined;
        },
      },
      steps: [{ content: [call("t1")] }, { text: "done" }],
    });
    await engine.prompt("go");
    expect(received).toEqual([{ text: { not: "a string" } }]);
  });

  /** An echo handler that records the arguments it ran with. */
  const recordingEcho = () => {
    const received: unknown[] = [];
    const handlers = {
      echo: (args: unknown) => {
        received.push(args);
        return ok("ran");
      },
    };
    return { received, handlers };
  };

  it("replacement args from beforeToolCall (an edited approval) are validated, then run", async () => {
    const { received, handlers } = recordingEcho();
    const { engine, rec } = testEngine({
      tools: [echoTool],
      handlers,
      hooks: {
        beforeToolCall: ({ toolCall }) => ({ args: toolCall.id === "t1" ? { text: "edited" } : { text: 5 } }),
      },
      steps: [{ content: [call("t1"), call("t2")] }, { text: "done" }],
    });
    await engine.prompt("go");
    // t2's replacement is coerced by the schema (5 → "5"), as the model's arguments would be.
    expect(received).toEqual([{ text: "edited" }, { text: "5" }]);
    const start = rec.events.find((e) => e.body.type === "tool_execution_start" && e.body.toolCallId === "t1");
    expect(start?.body).toMatchObject({ args: { text: "t1" } });
  });

  it("replacement args that fail the tool's schema give the validation error result", async () => {
    const { received, handlers } = recordingEcho();
    const { engine, rec } = testEngine({
      tools: [echoTool],
      handlers,
      hooks: { beforeToolCall: () => ({ args: { other: 1 } }) },
      steps: [{ content: [call("t1")] }, { text: "done" }],
    });
    await engine.prompt("go");
    expect(received).toEqual([]);
    expect(resultText(rec.events, "t1")).toMatch(/Validation failed for tool "echo"/);
  });

  it("afterToolCall overrides field by field, with no deep merge; it also sees thrown results", async () => {
    const seen: unknown[] = [];
    const { engine, rec } = testEngine({
      tools: [echoTool],
      handlers: {
        echo: (_a, _s, _u, id) => {
          if (id === "t2") throw new Error("broke");
          return { content: [{ type: "text", text: "orig" }], details: { a: 1, b: { c: 2 } } };
        },
      },
      hooks: {
        afterToolCall: ({ toolCall, result, isError }) => {
          seen.push([toolCall.id, result.content, isError]);
          if (toolCall.id === "t1") return { details: { b: {} }, isError: true };
          return { content: [{ type: "text", text: "patched" }], isError: false };
        },
      },
      steps: [{ content: [call("t1"), call("t2")] }, { text: "done" }],
    });
    await engine.prompt("go");
    const results = engine.state.messages.filter((m) => m.role === "toolResult");
    expect(results).toEqual([
      {
        role: "toolResult",
        toolCallId: "t1",
        toolName: "echo",
        content: [{ type: "text", text: "orig" }],
        details: { b: {} },
        isError: true,
        timestamp: 1000,
      },
      {
        role: "toolResult",
        toolCallId: "t2",
        toolName: "echo",
        content: [{ type: "text", text: "patched" }],
        details: {},
        isError: false,
        timestamp: 1000,
      },
    ]);
    expect(seen).toEqual([
      ["t1", [{ type: "text", text: "orig" }], false],
      ["t2", [{ type: "text", text: "broke" }], true],
    ]);
    expect(trace(rec.events)).toContain("turn_end[t1,t2]");
  });

  it("throwing tool hooks become error results with the thrown message", async () => {
    const { engine } = testEngine({
      tools: [echoTool],
      handlers: { echo: () => ok("fine") },
      hooks: {
        beforeToolCall: ({ toolCall }) => {
          if (toolCall.id === "t1") throw new Error("before broke");
          return undefined;
        },
        afterToolCall: ({ toolCall }) => {
          if (toolCall.id === "t2") throw "after broke";
          return undefined;
        },
      },
      steps: [{ content: [call("t1"), call("t2")] }, { text: "done" }],
    });
    await engine.prompt("go");
    const texts = engine.state.messages
      .filter((m) => m.role === "toolResult")
      .map((m) => (m.role === "toolResult" && m.content[0]?.type === "text" ? [m.content[0].text, m.isError] : []));
    expect(texts).toEqual([
      ["before broke", true],
      ["after broke", true],
    ]);
  });

  it("a remote runner's isError:true is honoured", async () => {
    const { engine, rec } = testEngine({
      tools: [echoTool],
      handlers: { echo: () => ({ content: [{ type: "text", text: "remote failure" }], isError: true }) },
      steps: [{ content: [call("t1")] }, { text: "done" }],
    });
    await engine.prompt("go");
    expect(trace(rec.events)).toContain("tool_execution_end:t1(err)");
    expect(trace(rec.events)).toContain("message_end:toolResult(t1,err)");
  });

  it("terminate: a batch where every result terminates ends the run; mixed batches continue", async () => {
    const term = testEngine({
      tools: [echoTool],
      handlers: { echo: () => ({ ...ok("bye"), terminate: true }) },
      steps: [{ content: [call("t1"), call("t2")] }],
    });
    await term.engine.prompt("go");
    expect(trace(term.rec.events).slice(-3)).toEqual(["message_end:toolResult(t2)", "turn_end[t1,t2]", "agent_end(4)"]);
    expect(term.provider.requests).toHaveLength(1);

    const mixed = testEngine({
      tools: [echoTool],
      handlers: { echo: (_a, _s, _u, id) => ({ ...ok("x"), terminate: id === "t1" }) },
      steps: [{ content: [call("t1"), call("t2")] }, { text: "done" }],
    });
    await mixed.engine.prompt("go");
    expect(mixed.provider.requests).toHaveLength(2);
  });

  it("terminate still honours queued steering", async () => {
    const { engine, rec } = testEngine({
      tools: [echoTool],
      handlers: {
        echo: async () => {
          await engine.steer({ role: "user", content: "S", timestamp: 1 });
          return { ...ok("bye"), terminate: true };
        },
      },
      steps: [{ content: [call("t1")] }, { text: "after steer" }],
    });
    await engine.prompt("go");
    expect(trace(rec.events).slice(-10)).toEqual([
      "message_end:toolResult(t1)",
      "turn_end[t1]",
      "turn_start",
      "queue_update(s0,f0,n0)",
      "message_start:user(S)",
      "message_end:user(S)",
      "message_start:assistant(…)",
      "message_end:assistant(stop)",
      "turn_end[]",
      "agent_end(5)",
    ]);
  });

  it("length stop: tool calls are not run; each fails with the output-token-limit text and the loop continues", async () => {
    let ran = 0;
    const { engine, rec, provider } = testEngine({
      tools: [echoTool],
      maxTokens: 4096,
      handlers: {
        echo: () => {
          ran++;
          return ok("ran");
        },
      },
      steps: [{ content: [call("t1"), call("t2")], stopReason: "length" }, { text: "retried" }],
    });
    await engine.prompt("go");
    expect(ran).toBe(0);
    expect(trace(rec.events).slice(5)).toEqual([
      "message_end:assistant(length)",
      "tool_execution_start:t1",
      "tool_execution_end:t1(err)",
      "message_start:toolResult(t1,err)",
      "message_end:toolResult(t1,err)",
      "tool_execution_start:t2",
      "tool_execution_end:t2(err)",
      "message_start:toolResult(t2,err)",
      "message_end:toolResult(t2,err)",
      "turn_end[t1,t2]",
      ...tail,
      "agent_end(5)",
    ]);
    expect(resultText(rec.events, "t1")).toBe(toolErrorText.lengthStop(4096));
    expect(provider.requests).toHaveLength(2);
  });

  it("updates after a tool settled are dropped", async () => {
    let late: ((p: unknown) => void) | undefined;
    const { engine, rec } = testEngine({
      tools: [echoTool],
      handlers: {
        echo: (_a, _s, onUpdate) => {
          late = onUpdate;
          return ok("x");
        },
      },
      steps: [{ content: [call("t1")] }, { text: "done" }],
    });
    await engine.prompt("go");
    late?.("too late");
    expect(trace(rec.events).filter((t) => t.startsWith("tool_execution_update"))).toEqual([]);
  });
});

const slowThrowing = (rec: Recorder) => {
  const t3Ended = deferred();
  rec.listen((e) => {
    if (e.body.type === "tool_execution_end" && e.body.toolCallId === "t3") t3Ended.resolve();
  });
  return {
    echo: async (args: unknown, _s: AbortSignal | undefined, _u: unknown, id: string) => {
      if (id === "t1") {
        await t3Ended.promise;
        throw new Error("kaboom");
      }
      return ok(String((args as { text: unknown }).text));
    },
  };
};
