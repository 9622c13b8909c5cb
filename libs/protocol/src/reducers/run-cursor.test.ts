import { describe, expect, it } from "vitest";
import {
  assistantMessage,
  createLogBuilder,
  startOf,
  streamAssistant,
  textOf,
  toolCall,
  userMessage,
} from "../../fixtures/builders.js";
import { SCENARIOS } from "../../fixtures/scenarios.js";
import type { FleetEvent } from "../events.js";
import { findRunCursor, foldRunCursor, idleRunCursor } from "./run-cursor.js";

const scenario = (name: string) => (SCENARIOS[name] as () => FleetEvent[])();

/** Index of the n-th (0-based) event matching `match`. */
function indexOf(events: FleetEvent[], match: (e: FleetEvent) => boolean, nth = 0): number {
  let seen = -1;
  const index = events.findIndex((e) => match(e) && ++seen === nth);
  if (index < 0) throw new Error("no such event");
  return index;
}
const through = (events: FleetEvent[], index: number) => findRunCursor(events.slice(0, index + 1));
const isType =
  (type: FleetEvent["type"], extra: (e: FleetEvent) => boolean = () => true) =>
  (e: FleetEvent) =>
    e.type === type && extra(e);
const role = (r: string) => (e: FleetEvent) => "message" in e && e.message.role === r;
const callId = (id: string) => (e: FleetEvent) => "toolCallId" in e && e.toolCallId === id;

describe("run cursor / a run with two parallel tools", () => {
  const events = scenario("parallel-tools");
  const at = (match: (e: FleetEvent) => boolean, nth = 0) => through(events, indexOf(events, match, nth));

  it("is idle before the run, remembering the accepted command", () => {
    expect(findRunCursor([])).toEqual({ kind: "idle", lastRunId: null, pendingTrigger: null });
    expect(at(isType("command_accepted"))).toEqual({
      kind: "idle",
      lastRunId: null,
      pendingTrigger: { commandId: "cmd-prompt", commandType: "prompt" },
    });
  });

  it("run_started after agent_start, awaiting_llm after turn_start and the prompt messages", () => {
    expect(at(isType("agent_start"))).toEqual({
      kind: "run_started",
      runId: "run-2-1",
      trigger: { commandId: "cmd-prompt", commandType: "prompt" },
      messages: [],
      turns: 0,
      abortRequested: false,
      undelivered: [],
    });
    expect(at(isType("turn_start"))).toMatchObject({ kind: "awaiting_llm", turns: 1, openMessage: null });
    const userStart = events[indexOf(events, isType("message_start", role("user")))] as FleetEvent & {
      message: unknown;
    };
    expect(at(isType("message_start", role("user")))).toMatchObject({
      kind: "awaiting_llm",
      openMessage: userStart.message,
    });
    expect(at(isType("message_end", role("user")))).toMatchObject({
      kind: "awaiting_llm",
      openMessage: null,
      messages: [userStart.message],
    });
  });

  it("streaming while the assistant message is open, with the partial rebuilt from deltas", () => {
    const cursor = at(isType("message_update"), 1);
    expect(cursor.kind).toBe("streaming");
    expect(cursor.kind === "streaming" && cursor.partial.content).toEqual([
      { type: "text", text: "Running both." },
      { type: "toolCall", id: "toolu_t1", name: "bash", arguments: { command: "sle" }, partialJson: '{"command":"sle' },
    ]);
  });

  it("tools_pending from the assistant message_end until turn_end", () => {
    const end = at(isType("message_end", role("assistant")));
    expect(end).toMatchObject({
      kind: "tools_pending",
      runId: "run-2-1",
      pendingToolCallIds: ["toolu_t1", "toolu_t2"],
      startedToolCallIds: [],
      endedResults: [],
      finishedResults: [],
    });
    expect(end.kind === "tools_pending" && end.toolCalls.map((c) => c.id)).toEqual(["toolu_t1", "toolu_t2"]);
    expect(at(isType("tool_execution_end", callId("toolu_t2")))).toMatchObject({
      kind: "tools_pending",
      startedToolCallIds: ["toolu_t1", "toolu_t2"],
      pendingToolCallIds: ["toolu_t1"],
      endedResults: [
        {
          toolCallId: "toolu_t2",
          toolName: "read",
          result: { content: [textOf("# Notes\nbuy milk")], details: {} },
          isError: false,
        },
      ],
    });
    const afterFirstResult = at(isType("message_end", role("toolResult")));
    expect(afterFirstResult).toMatchObject({ kind: "tools_pending", pendingToolCallIds: [], openMessage: null });
    expect(
      afterFirstResult.kind === "tools_pending" && afterFirstResult.finishedResults.map((r) => r.toolCallId),
    ).toEqual(["toolu_t1"]);
    expect(at(isType("message_start", role("toolResult")), 1)).toMatchObject({
      kind: "tools_pending",
      openMessage: { role: "toolResult", toolCallId: "toolu_t2" },
    });
  });

  it("between_turns after turn_end, awaiting_llm again after the next turn_start", () => {
    const between = at(isType("turn_end"));
    expect(between).toMatchObject({ kind: "between_turns", turns: 1 });
    expect(between.kind === "between_turns" && between.lastToolResults.map((r) => r.toolCallId)).toEqual([
      "toolu_t1",
      "toolu_t2",
    ]);
    expect(between.kind !== "idle" && between.messages.map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "toolResult",
      "toolResult",
    ]);
    expect(at(isType("turn_start"), 1)).toMatchObject({ kind: "awaiting_llm", turns: 2 });
    expect(at(isType("message_end", role("assistant")), 1)).toMatchObject({ kind: "awaiting_turn_end" });
  });

  it("idle again after agent_end", () => {
    expect(findRunCursor(events)).toEqual({ kind: "idle", lastRunId: "run-2-1", pendingTrigger: null });
  });
});

describe("run cursor / other positions", () => {
  it("an errored assistant is awaiting_turn_end even when it carries tool calls", () => {
    const log = createLogBuilder(1);
    log.add({ type: "agent_start" });
    log.add({ type: "turn_start" });
    const failed = assistantMessage([toolCall("t1", "read", {})], { stopReason: "error", errorMessage: "x" });
    log.add({ type: "message_start", message: startOf(failed) });
    log.add({ type: "message_end", message: failed });
    expect(findRunCursor(log.events)).toMatchObject({ kind: "awaiting_turn_end", assistantMessage: failed });
  });

  it("an abort mid-stream leaves streaming with the partial text until message_end", () => {
    const events = scenario("abort-mid-stream");
    const beforeEnd = events.findIndex((e) => e.type === "message_end" && e.message.role === "assistant") - 1;
    const cursor = findRunCursor(events.slice(0, beforeEnd + 1));
    expect(cursor.kind === "streaming" && cursor.partial.content).toEqual([textOf("Once upon a time")]);
  });

  it("tracks approvals until the call ends", () => {
    const log = createLogBuilder(2);
    log.add({ type: "agent_start" });
    log.add({ type: "turn_start" });
    const a = assistantMessage([toolCall("t1", "bash", { command: "rm -rf x" })]);
    log.add({ type: "message_end", message: a });
    log.add({ type: "tool_execution_start", toolCallId: "t1", toolName: "bash", args: {} });
    log.add({ type: "tool_approval_requested", toolCallId: "t1", toolName: "bash", args: {} });
    expect(findRunCursor(log.events)).toMatchObject({ awaitingApprovalIds: ["t1"], pendingToolCallIds: ["t1"] });
    log.add({ type: "tool_execution_end", toolCallId: "t1", toolName: "bash", result: { content: [] }, isError: true });
    expect(findRunCursor(log.events)).toMatchObject({ awaitingApprovalIds: [], pendingToolCallIds: [] });
  });

  it("an agent_start inside an unfinished run starts the new run; resumption events change nothing", () => {
    const log = createLogBuilder(3);
    log.add({ type: "agent_start" });
    log.add({ type: "turn_start" });
    log.add({ type: "agent_end", messages: [] });
    log.add({ type: "agent_start" });
    log.add({ type: "turn_start" });
    const resumed = log.add({ type: "run_resumed", runId: "run-3-2", reason: "owner changed" });
    const owner = log.add({ type: "owner_change", workerId: "w2", partition: 0, epoch: 2 });
    log.add({ type: "agent_start" }, { runId: "run-x" });
    expect(findRunCursor(log.events)).toMatchObject({ kind: "run_started", runId: "run-x", trigger: null, turns: 0 });
    const mid = findRunCursor(log.events.slice(0, 5));
    expect(foldRunCursor(mid, resumed)).toBe(mid);
    expect(foldRunCursor(mid, owner)).toBe(mid);
  });

  it("keeps the messages the log says the run delivers until their message_start: the prompt's, a drain's", () => {
    const log = createLogBuilder(4);
    const prompt = userMessage("do it");
    const queued = userMessage("queued before");
    log.add({ type: "command_accepted", commandId: "c1", commandType: "prompt", messages: [prompt] });
    log.add({ type: "agent_start" });
    expect(findRunCursor(log.events)).toMatchObject({ kind: "run_started", undelivered: [prompt] });
    log.add({ type: "turn_start" });
    log.add({ type: "queue_update", steer: [], followUp: [], nextTurn: [], delivering: [queued] });
    expect(findRunCursor(log.events)).toMatchObject({ kind: "awaiting_llm", undelivered: [queued, prompt] });
    log.add({ type: "message_start", message: queued });
    expect(findRunCursor(log.events)).toMatchObject({ openMessage: queued, undelivered: [prompt] });
    log.add({ type: "message_end", message: queued });
    log.add({ type: "message_start", message: prompt });
    log.add({ type: "message_end", message: prompt });
    expect(findRunCursor(log.events)).toMatchObject({ openMessage: null, undelivered: [], messages: [queued, prompt] });
    // a steering drain after a turn
    streamAssistant(log, assistantMessage([textOf("ok")]));
    log.add({ type: "turn_end", message: assistantMessage([textOf("ok")]), toolResults: [] });
    log.add({ type: "turn_start" });
    const steer = userMessage("steer");
    log.add({ type: "queue_update", steer: [], followUp: [], nextTurn: [], delivering: [steer] });
    expect(findRunCursor(log.events)).toMatchObject({ kind: "awaiting_llm", undelivered: [steer] });
  });

  it("leaves out of the run's messages one a session write logged at a flush point (pi's newMessages)", () => {
    const note = userMessage("a note");
    const build = (eventId: string) => {
      const log = createLogBuilder(4);
      const prompt = userMessage("do it");
      log.add({ type: "command_accepted", commandId: "c1", commandType: "prompt", messages: [prompt] });
      log.add({ type: "agent_start" });
      log.add({ type: "turn_start" });
      log.add({ type: "message_start", message: prompt });
      log.add({ type: "message_end", message: prompt });
      log.add({ type: "pending_write", commandId: "c2", write: { type: "message", message: note }, eventId });
      const answer = assistantMessage([textOf("ok")]);
      streamAssistant(log, answer);
      log.add({ type: "turn_end", message: answer, toolResults: [] });
      log.add({ type: "message_start", message: note });
      const id = log.nextId();
      log.add({ type: "message_end", message: note });
      return { events: log.events, id, prompt, answer };
    };
    const { events, prompt, answer } = build(build("unknown").id);
    const cursor = findRunCursor(events);
    expect(cursor).toMatchObject({ kind: "between_turns", messages: [prompt, answer] });
    // The same message ended by the run itself (no write names it) is the run's.
    const { events: unnamed } = build("another-event");
    expect(findRunCursor(unnamed)).toMatchObject({ messages: [prompt, answer, note] });
  });

  it("ignores message events outside a run", () => {
    const log = createLogBuilder(4);
    const start = log.add({ type: "message_start", message: userMessage("x") });
    const end = log.add({ type: "message_end", message: userMessage("x") });
    const idle = idleRunCursor();
    expect(foldRunCursor(idle, start)).toBe(idle);
    expect(foldRunCursor(idle, end)).toBe(idle);
  });
});
