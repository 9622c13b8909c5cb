import { describe, expect, it } from "vitest";
import {
  assistantMessage,
  CONFIG,
  createLogBuilder,
  deepFreeze,
  startOf,
  textOf,
  toolCall,
  toolResultMessage,
  userMessage,
} from "../../fixtures/builders.js";
import type { FleetEvent } from "../events.js";
import { type AgentState, foldAgentEvents, foldAgentState, initialAgentState, withMessages } from "./agent-state.js";

/** Folds `events` and returns the state after each one. */
const statesOf = (events: FleetEvent[], from: AgentState = initialAgentState()) => {
  const states: AgentState[] = [];
  let state = from;
  for (const event of events) {
    state = foldAgentState(deepFreeze(state), event);
    states.push(state);
  }
  return states;
};

const user = userMessage("hi");
const call = toolCall("toolu_1", "read", { path: "a.txt" });
const a1 = assistantMessage([textOf("Reading."), call]);
const r1 = toolResultMessage("toolu_1", "read", "content");
const a2 = assistantMessage([textOf("Done.")]);

describe("agent state / defaults", () => {
  it("starts as pi's Agent: idle, empty, thinking off, one-at-a-time, parallel", () => {
    expect(initialAgentState()).toEqual({
      systemPrompt: "",
      model: null,
      thinkingLevel: "off",
      activeTools: null,
      steeringMode: "one-at-a-time",
      followUpMode: "one-at-a-time",
      toolExecution: "parallel",
      messages: [],
      isStreaming: false,
      streamingMessage: undefined,
      pendingToolCalls: new Set(),
      errorMessage: undefined,
      queues: { steer: [], followUp: [], nextTurn: [] },
      runId: undefined,
    });
  });
});

describe("agent state / run lifecycle", () => {
  const log = createLogBuilder(1);
  log.add({ type: "agent_start" }); // 0
  log.add({ type: "turn_start" }); // 1
  log.add({ type: "message_start", message: user }); // 2
  log.add({ type: "message_end", message: user }); // 3
  log.add({ type: "message_start", message: startOf(a1) }); // 4
  log.add({
    type: "message_update",
    deltas: [
      { type: "text_start", contentIndex: 0 },
      { type: "text_delta", contentIndex: 0, delta: "Read" },
    ],
  }); // 5
  log.add({ type: "message_update", deltas: [{ type: "text_delta", contentIndex: 0, delta: "ing." }] }); // 6
  log.add({ type: "message_end", message: a1 }); // 7
  log.add({ type: "tool_execution_start", toolCallId: "toolu_1", toolName: "read", args: call.arguments }); // 8
  log.add({
    type: "tool_execution_end",
    toolCallId: "toolu_1",
    toolName: "read",
    result: { content: [] },
    isError: false,
  }); // 9
  log.add({ type: "message_start", message: r1 }); // 10
  log.add({ type: "message_end", message: r1 }); // 11
  log.add({ type: "turn_end", message: a1, toolResults: [r1] }); // 12
  log.add({ type: "turn_start" }); // 13
  log.add({ type: "message_start", message: startOf(a2) }); // 14
  log.add({ type: "message_end", message: a2 }); // 15
  log.add({ type: "turn_end", message: a2, toolResults: [] }); // 16
  log.add({ type: "agent_end", messages: [user, a1, r1, a2] }); // 17
  const states = statesOf(log.events);
  const at = (i: number) => states[i] as AgentState;

  it("isStreaming is true from agent_start until agent_end", () => {
    expect(states.map((s) => s.isStreaming)).toEqual([...Array(17).fill(true), false]);
    expect(at(0).runId).toBe("run-1-1");
    expect(at(17).runId).toBeUndefined();
  });

  it("streamingMessage is set by message_start for every role and cleared by message_end", () => {
    expect(at(2).streamingMessage).toBe(user);
    expect(at(3).streamingMessage).toBeUndefined();
    expect(at(10).streamingMessage).toBe(r1);
    expect(at(11).streamingMessage).toBeUndefined();
  });

  it("message_update rebuilds the streaming assistant message from its deltas", () => {
    expect(at(4).streamingMessage).toEqual(startOf(a1));
    expect(at(5).streamingMessage).toEqual({ ...startOf(a1), content: [{ type: "text", text: "Read" }] });
    expect(at(6).streamingMessage).toEqual({ ...startOf(a1), content: [{ type: "text", text: "Reading." }] });
  });

  it("messages grow on message_end only", () => {
    expect(states.map((s) => s.messages.length)).toEqual([0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4]);
    expect(at(17).messages).toEqual([user, a1, r1, a2]);
  });

  it("pendingToolCalls is a new Set on each tool start and end", () => {
    expect([...at(8).pendingToolCalls]).toEqual(["toolu_1"]);
    expect(at(8).pendingToolCalls).not.toBe(at(7).pendingToolCalls);
    expect([...at(9).pendingToolCalls]).toEqual([]);
    expect(at(9).pendingToolCalls).not.toBe(at(8).pendingToolCalls);
    expect(at(10).pendingToolCalls).toBe(at(9).pendingToolCalls);
  });

  it("ends idle: no streaming message, no pending calls, no error", () => {
    expect(at(17)).toMatchObject({ isStreaming: false, streamingMessage: undefined, errorMessage: undefined });
    expect(at(17).pendingToolCalls.size).toBe(0);
  });
});

describe("agent state / errors", () => {
  it("turn_end with an errored assistant sets errorMessage; agent_start of the next run clears it", () => {
    const failed = assistantMessage([], { stopReason: "error", errorMessage: "529 overloaded" });
    const log = createLogBuilder(2);
    log.add({ type: "agent_start" });
    log.add({ type: "turn_start" });
    log.add({ type: "message_start", message: startOf(failed) });
    log.add({ type: "message_end", message: failed });
    log.add({ type: "turn_end", message: failed, toolResults: [] });
    log.add({ type: "agent_end", messages: [failed] });
    log.add({ type: "agent_start" });
    const states = statesOf(log.events);
    expect(states.map((s) => s.errorMessage)).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      "529 overloaded",
      "529 overloaded",
      undefined,
    ]);
  });

  it("a later successful turn_end does not clear errorMessage within the run", () => {
    const failed = assistantMessage([], { stopReason: "error", errorMessage: "boom" });
    const log = createLogBuilder(3);
    log.add({ type: "agent_start" });
    log.add({ type: "turn_end", message: failed, toolResults: [] });
    log.add({ type: "turn_end", message: a2, toolResults: [] });
    expect(foldAgentEvents(log.events).errorMessage).toBe("boom");
  });

  it("agent_end clears a streaming message left open (abort before message_end)", () => {
    const log = createLogBuilder(4);
    log.add({ type: "agent_start" });
    log.add({ type: "message_start", message: startOf(a2) });
    log.add({ type: "agent_end", messages: [] });
    expect(foldAgentEvents(log.events).streamingMessage).toBeUndefined();
  });

  it("the batch fold equals the step fold and leaves the starting state (and its transcript) as it was", () => {
    const log = createLogBuilder(6);
    log.add({ type: "session_created", config: CONFIG });
    for (let i = 0; i < 3; i++) {
      log.add({ type: "agent_start" });
      log.add({ type: "message_end", message: user });
      log.add({ type: "message_start", message: startOf(a1) });
      log.add({ type: "message_end", message: a1 });
      log.add({ type: "tool_execution_start", toolCallId: "toolu_1", toolName: "read", args: {} });
      log.add({ type: "tool_execution_end", toolCallId: "toolu_1", toolName: "read", result: r1, isError: false });
      log.add({ type: "message_end", message: r1 });
      log.add({ type: "message_end", message: a2 });
      log.add({ type: "agent_end", messages: [] });
    }
    const from = deepFreeze(withMessages(initialAgentState(), [userMessage("earlier")]));
    const batch = foldAgentEvents(log.events, from);
    expect(batch).toEqual(statesOf(log.events, from).at(-1));
    expect(batch.messages).toHaveLength(1 + 3 * 4);
    expect(from.messages).toEqual([userMessage("earlier")]);
    const half = foldAgentEvents(log.events.slice(0, 9), from);
    const halfMessages = half.messages.slice();
    expect(foldAgentEvents(log.events.slice(9), half)).toEqual(batch);
    expect(half.messages).toEqual(halfMessages);
  });

  it("ignores a message_update with no streaming assistant message", () => {
    const log = createLogBuilder(5);
    log.add({ type: "message_start", message: user });
    const update = log.add({ type: "message_update", deltas: [{ type: "text_start", contentIndex: 0 }] });
    const state = foldAgentEvents(log.events.slice(0, 1));
    expect(foldAgentState(state, update)).toBe(state);
    const idle = initialAgentState();
    expect(foldAgentState(idle, update)).toBe(idle);
  });
});

describe("agent state / settings and queues", () => {
  it("takes config from session_created, then model, thinking and tool changes", () => {
    const log = createLogBuilder(6);
    log.add({ type: "session_created", config: { ...CONFIG, activeTools: ["read"], toolExecution: "sequential" } });
    const afterCreate = foldAgentEvents(log.events);
    expect(afterCreate).toMatchObject({
      systemPrompt: "You are a helpful assistant.",
      model: { provider: "anthropic", modelId: "claude-sonnet-4-5" },
      thinkingLevel: "off",
      activeTools: ["read"],
      steeringMode: "one-at-a-time",
      followUpMode: "one-at-a-time",
      toolExecution: "sequential",
    });
    log.add({ type: "model_change", provider: "openai", modelId: "gpt-5" });
    log.add({ type: "thinking_level_change", thinkingLevel: "high" });
    log.add({ type: "active_tools_change", toolNames: ["read", "bash"] });
    expect(foldAgentEvents(log.events)).toMatchObject({
      model: { provider: "openai", modelId: "gpt-5" },
      thinkingLevel: "high",
      activeTools: ["read", "bash"],
      messages: [],
    });
  });

  it("queue_update replaces all three queues", () => {
    const log = createLogBuilder(7);
    const s1 = userMessage("S1");
    const f1 = userMessage("F1");
    log.add({ type: "queue_update", steer: [s1], followUp: [f1], nextTurn: [] });
    expect(foldAgentEvents(log.events).queues).toEqual({ steer: [s1], followUp: [f1], nextTurn: [] });
    log.add({ type: "queue_update", steer: [], followUp: [f1], nextTurn: [s1] });
    expect(foldAgentEvents(log.events).queues).toEqual({ steer: [], followUp: [f1], nextTurn: [s1] });
  });

  it("returns the same state for events it does not track", () => {
    const log = createLogBuilder(8);
    const events = [
      log.add({ type: "command_accepted", commandId: "c", commandType: "prompt" }),
      log.add({ type: "label", targetId: "x", label: "l" }),
      log.add({ type: "leaf", targetId: null }),
      log.add({ type: "tool_execution_update", toolCallId: "t", toolName: "read", args: {}, partialResult: 1 }),
    ];
    const state = initialAgentState();
    for (const event of events) expect(foldAgentState(state, event)).toBe(state);
  });

  it("withMessages replaces the transcript (after compaction or navigation)", () => {
    const state = foldAgentEvents(createLogBuilder(9).events);
    const summary = { role: "compactionSummary" as const, summary: "s", tokensBefore: 10, timestamp: 1 };
    expect(withMessages(state, [summary, user]).messages).toEqual([summary, user]);
    expect(state.messages).toEqual([]);
  });
});
