// The sub-agent checker (invariant 9) on hand-built logs: a parent whose call its child answered
// passes, an aborted parent whose child was closed passes, and each broken variant is caught.
import {
  AGENT_TOOL_NAME,
  childCommandIds,
  childSessionId,
  emptySpend,
  type FleetEvent,
  type Spend,
} from "@fleet/protocol";
import {
  assistantMessage,
  CONFIG,
  createLogBuilder,
  textOf,
  toolCall,
  toolResultMessage,
  userMessage,
} from "@fleet/protocol/testing";
import { describe, expect, it } from "vitest";
import { agentCallsOf, checkSubAgents, emptySubAgentSummary } from "./check-sub-agents.js";
import type { SessionLog } from "./types.js";

const P = "parent-1";
const CALL = "toolu_a0";
const CHILD = childSessionId(P, CALL);
const ids = childCommandIds(CHILD);
const spend = (totalTokens: number): Spend => ({ ...emptySpend(), inputTokens: totalTokens, totalTokens });

/** The parent: one run with one `agent` call that ends with `result` (text, error, details), then its answer. */
function parentLog(result: { text: string; isError?: boolean; childTokens?: number }): SessionLog {
  const b = createLogBuilder(1, P);
  b.add({ type: "session_created", config: CONFIG });
  b.add({ type: "command_accepted", commandId: "c1", commandType: "prompt" });
  b.add({ type: "agent_start" });
  b.add({ type: "turn_start" });
  b.add({ type: "message_end", message: userMessage("delegate") });
  const calls = assistantMessage([toolCall(CALL, AGENT_TOOL_NAME, { prompt: "task" })], { tokens: 10 });
  b.add({ type: "message_end", message: calls });
  b.add({ type: "tool_execution_start", toolCallId: CALL, toolName: AGENT_TOOL_NAME, args: { prompt: "task" } });
  const details =
    result.childTokens === undefined ? undefined : { childSessionId: CHILD, spend: spend(result.childTokens) };
  b.add({
    type: "tool_execution_end",
    toolCallId: CALL,
    toolName: AGENT_TOOL_NAME,
    result: { content: [textOf(result.text)], ...(details ? { details } : {}) },
    isError: result.isError === true,
  });
  const r = toolResultMessage(CALL, AGENT_TOOL_NAME, result.text);
  b.add({ type: "message_end", message: r });
  b.add({ type: "turn_end", message: calls, toolResults: [r] });
  b.add({ type: "agent_end", messages: [] });
  return { sessionId: P, events: b.events, invalid: 0 };
}

/** The child: created by the parent's call, prompted, one run answering `answer` for `tokens`. */
function childEvents(opts: {
  answer?: string;
  /** The run ended without any assistant text (its stream cut, say). */
  noAnswer?: boolean;
  tokens?: number;
  runs?: number;
  end?: boolean;
  close?: "before" | "after";
}) {
  const b = createLogBuilder(2, CHILD);
  b.add({ type: "command_accepted", commandId: ids.create, commandType: "create_session" });
  b.add({
    type: "session_created",
    config: CONFIG,
    parent: { sessionId: P, runId: "run-1-1", toolCallId: CALL, depth: 1, closePolicy: "terminate" },
  });
  const abort = () => b.add({ type: "command_accepted", commandId: ids.abort, commandType: "abort" });
  if (opts.close === "before") abort();
  for (let run = 0; run < (opts.runs ?? 1); run++) {
    b.add({ type: "command_accepted", commandId: run === 0 ? ids.prompt : `again-${run}`, commandType: "prompt" });
    b.add({ type: "agent_start" });
    const final = opts.noAnswer
      ? assistantMessage([], { tokens: opts.tokens ?? 7, stopReason: "error", errorMessage: "Run interrupted" })
      : assistantMessage([textOf(opts.answer ?? "done")], { tokens: opts.tokens ?? 7 });
    b.add({ type: "message_end", message: final });
    if (opts.end === false) break;
    b.add({ type: "agent_end", messages: [final] });
  }
  if (opts.close === "after") abort();
  return b.events;
}

const check = (parent: SessionLog, child: readonly FleetEvent[] = []) => {
  const summary = emptySubAgentSummary();
  const vs = checkSubAgents(parent, new Map([[CHILD, { sessionId: CHILD, events: child, invalid: 0 }]]), summary);
  return { kinds: vs.map((v) => v.kind), summary };
};

describe("chaos / invariant 9: sub-agents", () => {
  it("a call answered with its child's text and spend passes, and names its child", () => {
    const parent = parentLog({ text: "done", childTokens: 7 });
    expect(agentCallsOf(parent)).toEqual([{ toolCallId: CALL, childId: CHILD, started: true }]);
    const { kinds, summary } = check(parent, childEvents({}));
    expect(kinds).toEqual([]);
    expect(summary).toMatchObject({ calls: 1, answered: 1, aborted: 0 });
  });

  it("catches a lost or changed answer, a wrong spend, a child missing, started twice or stuck", () => {
    expect(check(parentLog({ text: "other", childTokens: 7 }), childEvents({})).kinds).toContain(
      "child_result_mismatch",
    );
    expect(check(parentLog({ text: "timed out", isError: true }), childEvents({})).kinds).toContain(
      "child_result_error",
    );
    expect(check(parentLog({ text: "done", childTokens: 3 }), childEvents({})).kinds).toEqual([
      "child_spend",
      "parent_spend",
    ]);
    expect(check(parentLog({ text: "done", childTokens: 7 }), []).kinds).toEqual(["child_missing", "parent_spend"]);
    // A call that never ended names where its child stands.
    const open = parentLog({ text: "done", childTokens: 7 });
    const unended = { ...open, events: open.events.filter((e) => e.type !== "tool_execution_end") };
    expect(check(unended, childEvents({ end: false })).kinds).toEqual(["child_stuck", "call_unended"]);
    // A clear start failure is no violation while the child never ran; once it ran, its answer is lost.
    const failed = parentLog({ text: "Sub-agent could not be started: storage full", isError: true });
    expect(check(failed, []).kinds).toEqual([]);
    expect(check(failed, []).summary.startFailed).toBe(1);
    expect(check(failed, childEvents({})).kinds).toContain("child_result_error");
    expect(check(parentLog({ text: "done", childTokens: 7 }), childEvents({ runs: 2 })).kinds).toContain(
      "child_started_twice",
    );
    expect(check(parentLog({ text: "done", childTokens: 7 }), childEvents({ end: false })).kinds).toContain(
      "child_stuck",
    );
  });

  it("a child whose own run ended without an answer may end its call with that error, nothing else", () => {
    const cut = parentLog({
      text: `Sub-agent ${CHILD} ended without an answer (Run interrupted while streaming (worker w2 took over))`,
      isError: true,
      childTokens: 7,
    });
    expect(check(cut, childEvents({ noAnswer: true })).kinds).toEqual([]);
    // The same error while the child did answer: the answer was lost.
    expect(check(cut, childEvents({})).kinds).toContain("child_result_error");
    // Another error for a child without an answer is still a violation.
    const other = parentLog({ text: "timed out", isError: true, childTokens: 7 });
    expect(check(other, childEvents({ noAnswer: true })).kinds).toContain("child_result_error");
  });

  it("an aborted parent's child must have accepted its close and run nothing after it", () => {
    const aborted = parentLog({ text: "Operation aborted", isError: true });
    const closed = check(aborted, childEvents({ close: "after" }));
    expect(closed.kinds).toEqual([]);
    expect(closed.summary).toMatchObject({ aborted: 1, abortedChildren: 1, abortedChildTokens: 7 });
    // Aborted before the child was created: nothing to close.
    expect(check(aborted, []).kinds).toEqual([]);
    expect(check(aborted, childEvents({})).kinds).toEqual(["child_not_closed"]);
    expect(check(aborted, childEvents({ close: "before" })).kinds).toEqual(["child_ran_after_close"]);
  });
});
