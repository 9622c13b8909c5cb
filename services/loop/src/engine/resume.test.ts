// Resuming an interrupted run from a resume point (and from the protocol's run cursor).
import {
  ABORTED_ERROR_MESSAGE,
  type AssistantMessage,
  type FleetEvent,
  findRunCursor,
  type ToolResultMessage,
} from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import { interruptedErrorMessage, resumePointFromCursor } from "./resume-point.js";
import { echoTool, T0, testEngine, trace, user } from "./testing/harness.js";
import type { EngineEvent } from "./types.js";

const usage = {
  input: 0,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 0,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};
const assistant = (
  content: AssistantMessage["content"],
  stopReason: AssistantMessage["stopReason"] = "toolUse",
): AssistantMessage => ({
  role: "assistant",
  content,
  api: "scripted",
  provider: "scripted",
  model: "scripted-1",
  usage,
  stopReason,
  timestamp: T0,
});
const call = (id: string) => ({ type: "toolCall" as const, id, name: "echo", arguments: { text: id } });
const toolResult = (id: string, text = id): ToolResultMessage => ({
  role: "toolResult",
  toolCallId: id,
  toolName: "echo",
  content: [{ type: "text", text }],
  isError: false,
  timestamp: T0,
});

describe("resume", () => {
  it("interrupted while streaming: run_resumed, the dangling message closed as error, then a new turn calls the LLM", async () => {
    const { engine, rec, provider } = testEngine({
      steps: [{ text: "Hello again" }],
      init: { messages: [user("hi")], leafId: "u1" },
    });
    const partial = assistant([{ type: "text", text: "Hel" }], "stop");
    const result = await engine.resume({
      at: "streaming",
      runId: "run-1",
      reason: "owner changed",
      partial,
      runMessages: [user("hi")],
    });
    expect(trace(rec.events)).toEqual([
      "run_resumed(owner changed)",
      "message_end:assistant(error)",
      "turn_end[]",
      "turn_start",
      "message_start:assistant(…)",
      "message_end:assistant(stop)",
      "turn_end[]",
      "agent_end(3)",
    ]);
    expect(rec.events.every((e) => e.runId === "run-1")).toBe(true);
    expect(rec.events[0]?.body).toEqual({ type: "run_resumed", runId: "run-1", reason: "owner changed" });
    const closed = { ...partial, stopReason: "error", errorMessage: interruptedErrorMessage("owner changed") };
    expect(rec.events[1]?.body).toEqual({ type: "message_end", message: closed, entry: { id: "e2", parentId: "u1" } });
    expect(result).toMatchObject({ status: "completed", runId: "run-1" });
    expect(result.status === "completed" && result.messages.map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "assistant",
    ]);
    // the LLM sees the error message too (providers drop it when replaying)
    expect(provider.requests[0]?.context.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
  });

  it("interrupted while streaming, aborted once the cut message is closed: the retried call ends aborted, as pi's call after an abort does", async () => {
    const { engine, rec, provider } = testEngine({
      steps: [{ text: "never streamed" }],
      init: { messages: [user("hi")], leafId: "u1", queues: { steer: [], followUp: [user("F")], nextTurn: [] } },
    });
    rec.listen((e) => {
      if (e.body.type === "message_end" && e.body.message.role === "assistant") engine.abort();
    });
    const result = await engine.resume({
      at: "streaming",
      runId: "run-1",
      reason: "owner changed",
      partial: assistant([{ type: "text", text: "Hel" }], "stop"),
      runMessages: [user("hi")],
    });
    expect(trace(rec.events)).toEqual([
      "run_resumed(owner changed)",
      "message_end:assistant(error)",
      "turn_end[]",
      "turn_start",
      "message_start:assistant(…)",
      "message_end:assistant(aborted)",
      "turn_end[]",
      "agent_end(3)",
    ]);
    expect(provider.requests).toHaveLength(0);
    expect(result.status === "completed" && result.messages.at(-1)).toMatchObject({
      role: "assistant",
      content: [],
      stopReason: "aborted",
      errorMessage: ABORTED_ERROR_MESSAGE,
    });
    // An abort leaves the queues as they were.
    expect(engine.state.queues.followUp).toEqual([user("F")]);
  });

  it("interrupted while streaming after an abort was accepted: the cut message ends aborted and the run ends", async () => {
    const { engine, rec, provider } = testEngine({ steps: [{ text: "never" }], init: { messages: [user("hi")] } });
    await engine.resume({
      at: "streaming",
      runId: "run-1",
      reason: "owner changed",
      partial: assistant([{ type: "text", text: "Hel" }], "stop"),
      runMessages: [user("hi")],
      aborted: true,
    });
    expect(trace(rec.events)).toEqual([
      "run_resumed(owner changed)",
      "message_end:assistant(aborted)",
      "turn_end[]",
      "agent_end(2)",
    ]);
    expect(provider.requests).toHaveLength(0);
  });

  it("tool calls pending: recorded outcomes are reused, only missing calls run, missing results are emitted", async () => {
    const ran: string[] = [];
    const toolUse = assistant([call("t1"), call("t2"), call("t3")]);
    const { engine, rec } = testEngine({
      tools: [echoTool],
      handlers: {
        echo: (_a, _s, _u, id) => {
          ran.push(id);
          return { content: [{ type: "text", text: `${id}-fresh` }] };
        },
      },
      steps: [{ text: "done" }],
      init: { messages: [user("go"), toolUse, toolResult("t1")] },
    });
    await engine.resume({
      at: "tools_pending",
      runId: "run-1",
      reason: "crash",
      assistantMessage: toolUse,
      endedResults: new Map([
        ["t1", { result: { content: [{ type: "text", text: "t1" }] }, isError: false }],
        ["t2", { result: { content: [{ type: "text", text: "t2-recorded" }] }, isError: false }],
      ]),
      finishedResults: [toolResult("t1")],
    });
    expect(ran).toEqual(["t3"]);
    expect(trace(rec.events)).toEqual([
      "run_resumed(crash)",
      "tool_execution_start:t3",
      "tool_execution_end:t3",
      "message_start:toolResult(t2)",
      "message_end:toolResult(t2)",
      "message_start:toolResult(t3)",
      "message_end:toolResult(t3)",
      "turn_end[t1,t2,t3]",
      "turn_start",
      "message_start:assistant(…)",
      "message_end:assistant(stop)",
      "turn_end[]",
      "agent_end(3)",
    ]);
    const results = engine.state.messages.filter((m) => m.role === "toolResult");
    expect(
      results.map((m) => (m.role === "toolResult" && m.content[0]?.type === "text" ? m.content[0].text : "")),
    ).toEqual(["t1", "t2-recorded", "t3-fresh"]);
  });

  it("between turns: run_resumed, then steering is polled and the run carries on", async () => {
    const { engine, rec } = testEngine({
      steps: [{ text: "steered" }],
      init: {
        messages: [user("go"), assistant([{ type: "text", text: "a" }], "stop")],
        queues: { steer: [user("S")], followUp: [], nextTurn: [] },
      },
    });
    await engine.resume({
      at: "between_turns",
      runId: "r",
      reason: "crash",
      lastAssistant: assistant([{ type: "text", text: "a" }], "stop"),
    });
    expect(trace(rec.events)).toEqual([
      "run_resumed(crash)",
      "turn_start",
      "queue_update(s0,f0,n0)",
      "message_start:user(S)",
      "message_end:user(S)",
      "message_start:assistant(…)",
      "message_end:assistant(stop)",
      "turn_end[]",
      "agent_end(2)",
    ]);
  });

  it("between turns with nothing left: run_resumed, agent_end", async () => {
    const { engine, rec } = testEngine({});
    await engine.resume({ at: "between_turns", runId: "r", reason: "crash", lastAssistant: assistant([], "stop") });
    expect(trace(rec.events)).toEqual(["run_resumed(crash)", "agent_end(0)"]);
  });

  it("awaiting the LLM with an open message: its message_end, then the LLM call in the same turn", async () => {
    const { engine, rec } = testEngine({ steps: [{ text: "a" }] });
    await engine.resume({ at: "awaiting_llm", runId: "r", reason: "crash", turnOpen: true, openMessage: user("hi") });
    expect(trace(rec.events)).toEqual([
      "run_resumed(crash)",
      "message_end:user(hi)",
      "message_start:assistant(…)",
      "message_end:assistant(stop)",
      "turn_end[]",
      "agent_end(2)",
    ]);
  });

  it("awaiting the LLM with messages the log says it delivers: they are delivered, then the LLM is called", async () => {
    const { engine, rec, provider } = testEngine({ steps: [{ text: "a" }], init: { messages: [user("hi")] } });
    await engine.resume({
      at: "awaiting_llm",
      runId: "r",
      reason: "crash",
      turnOpen: true,
      openMessage: user("first"),
      undelivered: [user("second")],
    });
    expect(trace(rec.events)).toEqual([
      "run_resumed(crash)",
      "message_end:user(first)",
      "message_start:user(second)",
      "message_end:user(second)",
      "message_start:assistant(…)",
      "message_end:assistant(stop)",
      "turn_end[]",
      "agent_end(3)",
    ]);
    expect(provider.requests[0]?.context.messages).toEqual([user("hi"), user("first"), user("second")]);
  });

  it("a run cut before its first turn delivers its prompt in a new turn", async () => {
    const { engine, rec } = testEngine({ steps: [{ text: "a" }] });
    await engine.resume({
      at: "awaiting_llm",
      runId: "r",
      reason: "crash",
      turnOpen: false,
      undelivered: [user("go")],
    });
    expect(trace(rec.events)).toEqual([
      "run_resumed(crash)",
      "turn_start",
      "message_start:user(go)",
      "message_end:user(go)",
      "message_start:assistant(…)",
      "message_end:assistant(stop)",
      "turn_end[]",
      "agent_end(2)",
    ]);
  });

  it("awaiting turn_end of an error message: turn_end, agent_end", async () => {
    const { engine, rec } = testEngine({});
    await engine.resume({
      at: "awaiting_turn_end",
      runId: "r",
      reason: "crash",
      assistantMessage: { ...assistant([], "error"), errorMessage: "x" },
    });
    expect(trace(rec.events)).toEqual(["run_resumed(crash)", "turn_end[]", "agent_end(0)"]);
  });

  it("from the protocol's run cursor at every cut of a logged run, the resumed run completes the transcript", async () => {
    const steps = () => [{ content: [call("t1"), call("t2")] }, { text: "done" }];
    const handlers = {
      echo: (_a: unknown, _s: unknown, _u: unknown, id: string) => ({ content: [{ type: "text" as const, text: id }] }),
    };
    const full = testEngine({ tools: [echoTool], steps: steps(), handlers, chunkChars: 2 });
    await full.engine.prompt("go");
    const log = full.rec.events;
    const expected = full.engine.state.messages.map((m) => m.role);
    // The decider logs the prompt's input with its acceptance, before the run starts.
    const input = log.find((e) => e.body.type === "message_start")?.body;
    if (input?.type !== "message_start") throw new Error("no prompt message");
    const accepted = {
      type: "command_accepted",
      commandId: "c1",
      commandType: "prompt",
      messages: [input.message],
      meta: { v: 1, id: "a1", sessionId: "s", ts: T0, producer: "test" },
    } as FleetEvent;

    for (let cut = 1; cut < log.length - 1; cut++) {
      const prefix = log.slice(0, cut);
      const cursor = findRunCursor([accepted, ...prefix.map(toFleetEvent)]);
      const point = resumePointFromCursor(cursor, "cut");
      expect(point, `cut ${cut}`).toBeDefined();
      if (!point) continue;
      const messages = prefix.flatMap((e) => (e.body.type === "message_end" ? [e.body.message] : []));
      const leaf = prefix.filter((e) => "entry" in e.body).at(-1)?.id ?? null;
      // the resumed engine answers the LLM calls still ahead of it
      const remaining =
        point.at === "awaiting_llm" || point.at === "streaming"
          ? messages.some((m) => m.role === "toolResult")
            ? [{ text: "done" }]
            : steps()
          : [{ text: "done" }];
      const resumed = testEngine({ tools: [echoTool], steps: remaining, handlers, init: { messages, leafId: leaf } });
      const result = await resumed.engine.resume(point);
      expect(result.status, `cut ${cut}`).toBe("completed");
      const roles = resumed.engine.state.messages.map((m) => m.role);
      const closedPartial = point.at === "streaming" ? 1 : 0;
      expect(roles.length, `cut ${cut} (${point.at})`).toBe(expected.length + closedPartial);
      expect(trace(resumed.rec.events).at(-1), `cut ${cut}`).toMatch(/^agent_end/);
      const toolResults = resumed.engine.state.messages
        .filter((m) => m.role === "toolResult")
        .map((m) => (m.role === "toolResult" ? m.toolCallId : ""));
      expect(toolResults, `cut ${cut}`).toEqual(["t1", "t2"]);
    }
  });
});

function toFleetEvent(event: EngineEvent): FleetEvent {
  return {
    ...event.body,
    meta: {
      v: 1,
      id: event.id,
      sessionId: "s",
      ts: T0,
      ...(event.runId ? { runId: event.runId } : {}),
      producer: "test",
    },
  } as FleetEvent;
}
