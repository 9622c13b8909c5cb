// Replay with overrides (change 51): the plan taken from a source tree, recorded tool results, and
// the decider of the next replayed turn (given the replay session's events → the step).
import { describe, expect, it } from "vitest";
import {
  assistantMessage,
  CONFIG,
  createLogBuilder,
  emitMessage,
  promptToolRun,
  textOf,
  userMessage,
} from "../../fixtures/builders.js";
import { decodeSessionFold, encodeSessionFold } from "../reducers/session-fold-codec.js";
import { foldSessionEvents } from "../reducers/session-state.js";
import { foldSessionTreeEvents } from "../reducers/session-tree.js";
import { planReplay } from "./replay-plan.js";
import { NO_RECORDED_RESULT, type ReplayRecord, recordedResultOf, replayTurnCommandId } from "./replay-record.js";
import { decideReplayTurn } from "./replay-turn.js";

/** A source with two prompts: "go" (one `ls` call) and "again" (plain reply). */
function sourceTree() {
  const events = promptToolRun(7);
  const b = createLogBuilder(8);
  for (const e of events) b.add(e as never);
  b.add({ type: "command_accepted", commandId: "p2", commandType: "prompt" });
  b.add({ type: "agent_start" });
  emitMessage(b, userMessage("again"));
  const reply = assistantMessage([textOf("ok")]);
  b.add({ type: "message_start", message: reply });
  b.add({ type: "message_end", message: reply });
  b.add({ type: "agent_end", messages: [reply] });
  return foldSessionTreeEvents(b.events);
}

describe("replay / plan", () => {
  it("replays every user message when no entry is given, with the tool results recorded", () => {
    const tree = sourceTree();
    const plan = planReplay(tree, { sessionId: "src" });
    expect(plan.ok).toBe(true);
    if (!plan.ok) return;
    expect(plan.kept).toEqual([]);
    expect(plan.record).toEqual({
      sessionId: "src",
      fromEntry: null,
      kept: 0,
      toEntry: tree.leafId,
      overrides: {},
      toolsMode: "recorded",
      turns: [userMessage("go"), userMessage("again")],
      recorded: [{ toolName: "ls", args: {}, content: [textOf("a.txt")], isError: false, details: {} }],
    });
  });

  it("keeps the branch up to `fromEntry` and replays the user messages after it", () => {
    const tree = sourceTree();
    const firstReply = tree.entries.find(
      (e) => e.type === "message" && e.message.role === "assistant" && e.message.stopReason === "stop",
    );
    const plan = planReplay(tree, {
      sessionId: "src",
      fromEntry: firstReply?.id as string,
      toolsMode: "live",
      overrides: { model: { provider: "anthropic", modelId: "m2" } },
    });
    expect(plan.ok && plan.kept.map((e) => e.id)).toEqual(tree.entries.slice(0, 4).map((e) => e.id));
    expect(plan.ok && plan.record.turns).toEqual([userMessage("again")]);
    expect(plan.ok && plan.record.recorded).toEqual([]);
    expect(plan.ok && plan.record.overrides).toEqual({ model: { provider: "anthropic", modelId: "m2" } });
  });

  it("refuses an entry off the current branch, and a fork point with nothing after it", () => {
    const tree = sourceTree();
    expect(planReplay(tree, { sessionId: "src", fromEntry: "nope" })).toEqual({
      ok: false,
      code: "not_found",
      error: "Entry nope is not on the current branch of src",
    });
    expect(planReplay(tree, { sessionId: "src", fromEntry: tree.leafId as string })).toEqual({
      ok: false,
      code: "invalid",
      error: "No user message to replay after the fork point",
    });
  });
});

describe("replay / recorded tool results", () => {
  const record: Pick<ReplayRecord, "recorded"> = {
    recorded: [
      { toolName: "read", args: { path: "a", n: 1 }, content: [textOf("first")], isError: false },
      { toolName: "read", args: { n: 1, path: "a" }, content: [textOf("second")], isError: false },
      { toolName: "bash", args: { cmd: "x" }, content: [textOf("boom")], isError: true },
    ],
  };

  it("answers the n-th call with the same name and arguments (any key order) with the n-th result, then the last", () => {
    const call = { toolName: "read", args: { n: 1, path: "a" } };
    expect(recordedResultOf(record, call, 0)).toEqual({ content: [textOf("first")], isError: false });
    expect(recordedResultOf(record, call, 1)).toEqual({ content: [textOf("second")], isError: false });
    expect(recordedResultOf(record, call, 5)).toEqual({ content: [textOf("second")], isError: false });
    expect(recordedResultOf(record, { toolName: "bash", args: { cmd: "x" } }, 0)).toEqual({
      content: [textOf("boom")],
      isError: true,
    });
  });

  it("answers any other call with an error result saying the source made no such call", () => {
    expect(recordedResultOf(record, { toolName: "read", args: { path: "b" } }, 0)).toEqual({
      content: [textOf(NO_RECORDED_RESULT("read"))],
      isError: true,
    });
  });
});

describe("replay / next turn decider", () => {
  const turns = [userMessage("one"), userMessage("two")];
  const replayOf: ReplayRecord = {
    sessionId: "src",
    fromEntry: null,
    kept: 0,
    toEntry: "e-9",
    overrides: { thinkingLevel: "high" },
    toolsMode: "recorded",
    turns,
    recorded: [],
  };
  /** The replay session's log: created, then `done` turns run to their end. */
  function replayLog(done: number) {
    const b = createLogBuilder(9, "r-1");
    b.add({ type: "command_accepted", commandId: "c-replay", commandType: "replay" });
    b.add({ type: "session_created", config: CONFIG, replayOf });
    for (let k = 0; k < done; k++) runTurn(b, k);
    return b;
  }
  function runTurn(b: ReturnType<typeof createLogBuilder>, k: number, end = true) {
    b.add({
      type: "command_accepted",
      commandId: replayTurnCommandId(k),
      commandType: "prompt",
      messages: [turns[k] as never],
    });
    b.add({ type: "agent_start" });
    b.add({ type: "turn_start" });
    emitMessage(b, turns[k] as never);
    if (!end) return;
    const reply = assistantMessage([textOf(`reply ${k}`)]);
    b.add({ type: "message_start", message: reply });
    b.add({ type: "message_end", message: reply });
    b.add({ type: "turn_end", message: reply, toolResults: [] });
    b.add({ type: "agent_end", messages: [reply] });
  }

  it("given a session that is no replay, decides nothing", () => {
    const b = createLogBuilder(1);
    b.add({ type: "session_created", config: CONFIG });
    expect(decideReplayTurn(foldSessionEvents(b.events))).toEqual({ kind: "none" });
  });

  it("given a replay just created, runs turn 0 with its message", () => {
    expect(decideReplayTurn(foldSessionEvents(replayLog(0).events))).toEqual({
      kind: "turn",
      index: 0,
      commandId: "replay-turn-0",
      message: turns[0],
    });
  });

  it("given turn 0 accepted and its run not begun yet, waits", () => {
    const b = replayLog(0);
    b.add({
      type: "command_accepted",
      commandId: replayTurnCommandId(0),
      commandType: "prompt",
      messages: [turns[0] as never],
    });
    expect(decideReplayTurn(foldSessionEvents(b.events))).toEqual({ kind: "wait", index: 1 });
  });

  it("given turn 0 accepted and its run open, waits", () => {
    const b = replayLog(0);
    runTurn(b, 0, false);
    expect(decideReplayTurn(foldSessionEvents(b.events))).toEqual({ kind: "wait", index: 1 });
  });

  it("given turn 0's run ended, runs turn 1", () => {
    expect(decideReplayTurn(foldSessionEvents(replayLog(1).events))).toMatchObject({ kind: "turn", index: 1 });
  });

  it("given every turn ran, is done", () => {
    expect(decideReplayTurn(foldSessionEvents(replayLog(2).events))).toEqual({ kind: "done", turns: 2 });
  });

  it("given a turn refused (a budget), stops there", () => {
    const b = replayLog(1);
    b.add({
      type: "command_rejected",
      commandId: replayTurnCommandId(1),
      commandType: "prompt",
      code: "budget_exceeded",
      reason: "over",
    });
    expect(decideReplayTurn(foldSessionEvents(b.events))).toEqual({
      kind: "done",
      turns: 1,
      stopped: { index: 1, commandId: "replay-turn-1" },
    });
  });

  it("given a compaction open between turns, waits", () => {
    const b = replayLog(1);
    b.add({ type: "compaction_start", reason: "manual" });
    expect(decideReplayTurn(foldSessionEvents(b.events))).toEqual({ kind: "wait", index: 1 });
  });

  it("keeps the replay in a snapshot of the fold: the decoded fold decides the same turn", () => {
    const state = foldSessionEvents(replayLog(1).events);
    const decoded = decodeSessionFold(JSON.parse(JSON.stringify(encodeSessionFold(state))));
    expect(decoded.ok && decoded.value.replay).toEqual(replayOf);
    expect(decoded.ok && decideReplayTurn(decoded.value)).toEqual(decideReplayTurn(state));
    const plain = foldSessionEvents(createLogBuilder(1).events);
    expect("replay" in encodeSessionFold(plain)).toBe(false);
  });

  it("takes the replay from the first session_created only", () => {
    const b = replayLog(2);
    b.add({ type: "session_created", config: CONFIG, replayOf: { ...replayOf, turns: [...turns, userMessage("3")] } });
    expect(decideReplayTurn(foldSessionEvents(b.events))).toEqual({ kind: "done", turns: 2 });
  });
});
