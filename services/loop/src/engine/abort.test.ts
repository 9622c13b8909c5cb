// Abort and LLM errors, including Fleet's deliberate differences from pi 0.73 (README §Differences).
import { ABORTED_ERROR_MESSAGE, toolErrorText } from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import { deferred, echoTool, flush, manualSleep, resultText, T0, testEngine, trace, user } from "./testing/harness.js";

const call = (id: string) => ({ type: "toolCall" as const, id, name: "echo", arguments: { text: id } });
const ok = (text: string) => ({ content: [{ type: "text" as const, text }] });
const never = () => new Promise<never>(() => {});

describe("abort", () => {
  it("mid-stream: partial content kept, stopReason aborted, 'Request was aborted'; queues untouched", async () => {
    const clock = manualSleep();
    const { engine, rec } = testEngine({
      steps: [{ text: "Hello world" }],
      sleep: clock.sleep,
      tokensPerSecond: 10,
      chunkChars: 5,
      init: { queues: { steer: [], followUp: [user("F")], nextTurn: [] } },
    });
    rec.listen((e) => {
      if (e.body.type === "message_update" && e.body.deltas[0]?.type === "text_delta") engine.abort();
    });
    const run = engine.prompt("hi");
    await flush();
    expect(clock.waiting()).toBe(1);
    await clock.tick();
    await run;
    expect(trace(rec.events, { updates: true })).toEqual([
      "agent_start",
      "turn_start",
      "message_start:user(hi)",
      "message_end:user(hi)",
      "message_start:assistant(…)",
      "message_update:text_start",
      "message_update:text_delta",
      "message_end:assistant(aborted)",
      "turn_end[]",
      "agent_end(2)",
    ]);
    const last = engine.state.messages.at(-1);
    expect(last).toMatchObject({
      role: "assistant",
      content: [{ type: "text", text: "Hello" }],
      stopReason: "aborted",
      errorMessage: ABORTED_ERROR_MESSAGE,
    });
    expect(engine.state.queues.followUp).toEqual([user("F")]);
    expect(engine.state.errorMessage).toBe(ABORTED_ERROR_MESSAGE);
  });

  it("a provider that ignores the signal does not hold the run: the engine finishes the message itself", async () => {
    const { engine, rec, ports } = testEngine({});
    ports.streamFn = async function* () {
      yield {
        type: "start",
        partial: {
          role: "assistant",
          content: [],
          api: "x",
          provider: "x",
          model: "m",
          usage: zero(),
          stopReason: "stop",
          timestamp: T0,
        },
      };
      yield { type: "toolcall_start", contentIndex: 0, id: "t1", name: "echo" };
      yield { type: "toolcall_delta", contentIndex: 0, delta: '{"text":"par' };
      await never();
    };
    const run = engine.prompt("hi");
    await flush();
    engine.abort();
    await run;
    expect(trace(rec.events).slice(-3)).toEqual(["message_end:assistant(aborted)", "turn_end[]", "agent_end(2)"]);
    expect(engine.state.messages.at(-1)).toMatchObject({
      content: [{ type: "toolCall", id: "t1", name: "echo", arguments: { text: "par" } }],
      stopReason: "aborted",
    });
  });

  it("an abort naming another run leaves the active run alone; naming it, aborts it", async () => {
    const { engine, rec, ports } = testEngine({});
    // A provider that never answers: only an abort ends the run.
    ports.streamFn = async function* () {
      yield* [];
      await never();
    };
    const run = engine.prompt("hi");
    await flush();
    const active = engine.state.runId;
    expect(active).toBeDefined();
    engine.abort("an-earlier-run");
    await flush();
    expect(engine.state.isStreaming).toBe(true);
    expect(trace(rec.events).at(-1)).toBe("message_end:user(hi)");
    engine.abort(active);
    await run;
    expect(trace(rec.events).slice(-3)).toEqual(["message_end:assistant(aborted)", "turn_end[]", "agent_end(2)"]);
  });

  it("before the stream started: message_start and message_end back to back, no LLM call", async () => {
    const { engine, rec, provider } = testEngine({ steps: [{ text: "never" }] });
    rec.listen((e) => {
      if (e.body.type === "message_end" && e.body.message.role === "user") engine.abort();
    });
    await engine.prompt("hi");
    expect(trace(rec.events).slice(4)).toEqual([
      "message_start:assistant(…)",
      "message_end:assistant(aborted)",
      "turn_end[]",
      "agent_end(2)",
    ]);
    expect(provider.requests).toHaveLength(0);
    expect(engine.state.messages.at(-1)).toMatchObject({
      content: [],
      stopReason: "aborted",
      errorMessage: "Request was aborted",
    });
  });

  it("during a parallel batch (Fleet): finished results kept, unfinished → Operation aborted, no extra aborted turn", async () => {
    const signals: (AbortSignal | undefined)[] = [];
    const { engine, rec, provider } = testEngine({
      tools: [echoTool],
      handlers: {
        echo: async (_a, signal, _u, id) => {
          signals.push(signal);
          if (id === "t1") return never();
          return ok("fast");
        },
      },
      steps: [{ content: [call("t1"), call("t2")] }, { text: "never" }],
    });
    rec.listen((e) => {
      if (e.body.type === "tool_execution_end" && e.body.toolCallId === "t2") engine.abort();
    });
    await engine.prompt("go");
    expect(trace(rec.events).slice(5)).toEqual([
      "message_end:assistant(toolUse)",
      "tool_execution_start:t1",
      "tool_execution_start:t2",
      "tool_execution_end:t2",
      "tool_execution_end:t1(err)",
      "message_start:toolResult(t1,err)",
      "message_end:toolResult(t1,err)",
      "message_start:toolResult(t2)",
      "message_end:toolResult(t2)",
      "turn_end[t1,t2]",
      "agent_end(4)",
    ]);
    expect(resultText(rec.events, "t1")).toBe(toolErrorText.aborted);
    expect(resultText(rec.events, "t2")).toBe("fast");
    expect(provider.requests).toHaveLength(1);
    expect(signals.every((s) => s?.aborted)).toBe(true);
    expect(engine.state.messages.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "toolResult"]);
    expect(engine.state.pendingToolCalls.size).toBe(0);
  });

  it("during preflight: calls not yet started end as Operation aborted without running", async () => {
    let ran = 0;
    const { engine, rec } = testEngine({
      tools: [echoTool],
      handlers: {
        echo: () => {
          ran++;
          return ok("x");
        },
      },
      hooks: {
        beforeToolCall: ({ toolCall }) => {
          if (toolCall.id === "t1") engine.abort();
          return undefined;
        },
      },
      steps: [{ content: [call("t1"), call("t2")] }],
    });
    await engine.prompt("go");
    expect(ran).toBe(0);
    expect(trace(rec.events).slice(6)).toEqual([
      "tool_execution_start:t1",
      "tool_execution_end:t1(err)",
      "tool_execution_start:t2",
      "tool_execution_end:t2(err)",
      "message_start:toolResult(t1,err)",
      "message_end:toolResult(t1,err)",
      "message_start:toolResult(t2,err)",
      "message_end:toolResult(t2,err)",
      "turn_end[t1,t2]",
      "agent_end(4)",
    ]);
  });

  it("during a sequential batch: the running call and the calls after it end as Operation aborted", async () => {
    const { engine, rec } = testEngine({
      tools: [echoTool],
      config: { toolExecution: "sequential" },
      handlers: {
        echo: (_a, signal) =>
          new Promise((_resolve, reject) =>
            signal?.addEventListener("abort", () => reject(new Error("Command aborted"))),
          ),
      },
      steps: [{ content: [call("t1"), call("t2")] }],
    });
    rec.listen((e) => {
      if (e.body.type === "tool_execution_start" && e.body.toolCallId === "t1") setTimeout(() => engine.abort(), 0);
    });
    await engine.prompt("go");
    expect(trace(rec.events).slice(6)).toEqual([
      "tool_execution_start:t1",
      "tool_execution_end:t1(err)",
      "message_start:toolResult(t1,err)",
      "message_end:toolResult(t1,err)",
      "tool_execution_start:t2",
      "tool_execution_end:t2(err)",
      "message_start:toolResult(t2,err)",
      "message_end:toolResult(t2,err)",
      "turn_end[t1,t2]",
      "agent_end(4)",
    ]);
    expect(resultText(rec.events, "t1")).toBe("Operation aborted");
  });

  it("is checked between turns (Fleet): abort at turn_end ends the run without polling the queues", async () => {
    const { engine, rec, provider } = testEngine({
      tools: [echoTool],
      handlers: { echo: () => ok("x") },
      steps: [{ content: [call("t1")] }, { text: "never" }],
      init: { queues: { steer: [], followUp: [user("F")], nextTurn: [] } },
    });
    rec.listen((e) => {
      if (e.body.type === "turn_end") engine.abort();
    });
    await engine.prompt("go");
    expect(trace(rec.events).slice(-2)).toEqual(["turn_end[t1]", "agent_end(3)"]);
    expect(provider.requests).toHaveLength(1);
    expect(engine.state.queues.followUp).toEqual([user("F")]);
  });

  it("while idle is a no-op; the next run starts with a fresh signal", async () => {
    const { engine, rec } = testEngine({ steps: [{ text: "fine" }] });
    engine.abort();
    await engine.prompt("hi");
    expect(trace(rec.events).slice(-3)).toEqual(["message_end:assistant(stop)", "turn_end[]", "agent_end(2)"]);
  });

  it("an abort while the last call's results go out: they all precede turn_end and agent_end", async () => {
    // The emit port holds the last call's tool_execution_end until the abort was requested.
    const held = deferred();
    let holding = false;
    const { engine, rec } = testEngine({
      tools: [echoTool],
      steps: [{ content: [call("t1"), call("t2")] }, { text: "never" }],
      handlers: { echo: async (args: unknown) => ok((args as { text: string }).text) },
      wrapEmit: (emit) => (event) => {
        if (event.body.type === "tool_execution_end" && event.body.toolCallId === "t2" && !holding) {
          holding = true;
          return held.promise.then(() => emit(event));
        }
        return emit(event);
      },
    });
    const run = engine.prompt("go");
    for (let i = 0; i < 50 && !holding; i++) await flush();
    expect(holding).toBe(true);
    engine.abort();
    await flush();
    held.resolve();
    await run;
    expect(trace(rec.events).slice(-8)).toEqual([
      "tool_execution_end:t1",
      "tool_execution_end:t2",
      "message_start:toolResult(t1)",
      "message_end:toolResult(t1)",
      "message_start:toolResult(t2)",
      "message_end:toolResult(t2)",
      "turn_end[t1,t2]",
      "agent_end(4)",
    ]);
  });
});

describe("LLM error", () => {
  it("ends the run at once: message_end(error), turn_end[], agent_end; queues intact; errorMessage set", async () => {
    const { engine, rec } = testEngine({
      steps: [{ text: "partial", stopReason: "error", errorMessage: "529 overloaded" }],
      init: { queues: { steer: [], followUp: [user("F")], nextTurn: [] } },
    });
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
    expect(engine.state.errorMessage).toBe("529 overloaded");
    expect(engine.state.queues.followUp).toEqual([user("F")]);
    expect(engine.state.messages.at(-1)).toMatchObject({
      content: [{ type: "text", text: "partial" }],
      stopReason: "error",
    });
  });

  it("tool calls of an error message are never run", async () => {
    let ran = 0;
    const { engine, rec } = testEngine({
      tools: [echoTool],
      handlers: {
        echo: () => {
          ran++;
          return ok("x");
        },
      },
      steps: [{ content: [call("t1")], error: "cut" }],
    });
    await engine.prompt("go");
    expect(ran).toBe(0);
    expect(trace(rec.events).some((t) => t.startsWith("tool_execution"))).toBe(false);
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
