// Specs of the runtime core: given a log, when an input of any kind arrives (a command, a provider
// chunk, a tool result, a timer), then these events and effects. No server, no clock: time and ids
// are the spec's.
import { ABORTED_ERROR_MESSAGE } from "@fleet/protocol";
import {
  assistantMessage,
  CONFIG,
  type EventInput,
  startOf,
  T0,
  textOf,
  toolCall,
  userMessage,
} from "@fleet/protocol/testing";
import { describe, expect, it } from "vitest";
import { command, given, ONE_RUN, secondRunStarted } from "../testing/decider-spec.js";

const go = userMessage("go");
const idle: EventInput[] = [{ type: "session_created", config: CONFIG }, ...ONE_RUN];
const turnOpen: EventInput[] = secondRunStarted(go);
const answer = assistantMessage([textOf("hello there")]);
const streaming: EventInput[] = [...turnOpen, { type: "message_start", message: startOf(answer) }];

const twoCalls = assistantMessage([toolCall("t1", "bash", { command: "ls" }), toolCall("t2", "read", { path: "a" })], {
  stopReason: "toolUse",
});
const toolsStarted: EventInput[] = [
  ...turnOpen,
  { type: "message_start", message: startOf(twoCalls) },
  { type: "message_end", message: twoCalls },
  { type: "tool_execution_start", toolCallId: "t1", toolName: "bash", args: { command: "ls" } },
  { type: "tool_execution_start", toolCallId: "t2", toolName: "read", args: { path: "a" } },
];
/** A toolResult message's fields from an outcome (`details` only when the result has some). */
const contentOf = (o: { result: { content: unknown[]; details?: unknown }; isError: boolean }) => ({
  content: o.result.content,
  ...(o.result.details !== undefined ? { details: o.result.details } : {}),
  isError: o.isError,
});
const lsOutcome = { result: { content: [textOf("a.txt")] }, isError: false };
const readOutcome = { result: { content: [textOf("A")], details: { bytes: 1 } }, isError: false };

/** The entry fields the writer gives an entry event appended at the log's leaf (ids `d1`, `d2`, …). */
const atLeaf = (log: EventInput[], id: string) => ({ id, parentId: given(...log).state.tree.leafId });

describe("runtime core / command", () => {
  it("a fresh command is the decider's: outcome first, then its effect", () => {
    given(...idle)
      .whenInput({ kind: "command", input: { ok: true, command: command("prompt", { text: "again" }) } })
      .then({
        events: [
          {
            type: "command_accepted",
            commandId: "cmd-1",
            commandType: "prompt",
            messages: [{ role: "user", content: [textOf("again")], timestamp: T0 }],
          },
        ],
        effects: [
          {
            type: "start_run",
            kind: "prompt",
            messages: [{ role: "user", content: [textOf("again")], timestamp: T0 }],
          },
        ],
      });
  });

  it("a command whose id has an outcome decides nothing new; an undecodable one with a known id neither", () => {
    const known = command("prompt", { id: "c0", text: "hello" });
    given(...idle)
      .whenInput({ kind: "command", input: { ok: true, command: known } })
      .then({ events: [] });
    given(...idle)
      .whenInput({
        kind: "command",
        input: { ok: false, commandId: "c0", commandType: "prompt", code: "invalid", reason: "bad" },
      })
      .then({ events: [] });
  });
});

describe("runtime core / provider chunk", () => {
  it("start opens the message with a copy of the provider's partial", () => {
    given(...turnOpen)
      .whenInput({ kind: "provider_chunk", chunk: { type: "start", partial: startOf(answer) } })
      .then({ events: [{ type: "message_start", message: startOf(answer) }] });
  });

  it("a delta of the open message is one message_update; before start it is ignored (pi)", () => {
    const delta = { type: "text_start", contentIndex: 0 } as const;
    given(...streaming)
      .whenInput({ kind: "provider_chunk", chunk: delta })
      .then({ events: [{ type: "message_update", deltas: [delta] }] });
    given(...turnOpen)
      .whenInput({ kind: "provider_chunk", chunk: delta })
      .then({ events: [] });
  });

  it("done ends the streamed message; a call that never started gets its message_start first", () => {
    given(...streaming)
      .whenInput({ kind: "provider_chunk", chunk: { type: "done", reason: "stop", message: answer } })
      .then({ events: [{ type: "message_end", message: answer, entry: atLeaf(streaming, "d1") }] });
    given(...turnOpen)
      .whenInput({ kind: "provider_chunk", chunk: { type: "done", reason: "stop", message: answer } })
      .then({
        events: [
          { type: "message_start", message: answer },
          { type: "message_end", message: answer, entry: atLeaf(turnOpen, "d2") },
        ],
      });
  });

  it("an aborted error ends the message aborted with pi's text; another error ends it as an error", () => {
    const cut = assistantMessage([textOf("hel")], { stopReason: "error", errorMessage: "socket closed" });
    const aborted = { ...cut, stopReason: "aborted" as const, errorMessage: ABORTED_ERROR_MESSAGE };
    given(...streaming)
      .whenInput({ kind: "provider_chunk", chunk: { type: "error", reason: "aborted", error: cut } })
      .then({ events: [{ type: "message_end", message: aborted, entry: atLeaf(streaming, "d1") }] });
    const odd = assistantMessage([textOf("hel")], { stopReason: "stop", errorMessage: "overloaded" });
    given(...streaming)
      .whenInput({ kind: "provider_chunk", chunk: { type: "error", reason: "error", error: odd } })
      .then({
        events: [{ type: "message_end", message: { ...odd, stopReason: "error" }, entry: atLeaf(streaming, "d1") }],
      });
  });
});

describe("runtime core / tool result", () => {
  it("a result while other calls are pending is its tool_execution_end only", () => {
    given(...toolsStarted)
      .whenInput({ kind: "tool_result", toolCallId: "t2", outcome: readOutcome })
      .then({
        events: [
          {
            type: "tool_execution_end",
            toolCallId: "t2",
            toolName: "read",
            result: readOutcome.result,
            isError: false,
          },
        ],
      });
  });

  it("the batch's last result is followed by the toolResult messages in source order", () => {
    const t1 = { role: "toolResult", toolCallId: "t1", toolName: "bash", ...contentOf(lsOutcome), timestamp: T0 };
    const t2 = { role: "toolResult", toolCallId: "t2", toolName: "read", ...contentOf(readOutcome), timestamp: T0 };
    const log: EventInput[] = [
      ...toolsStarted,
      { type: "tool_execution_end", toolCallId: "t2", toolName: "read", result: readOutcome.result, isError: false },
    ];
    given(...log)
      .whenInput({ kind: "tool_result", toolCallId: "t1", outcome: lsOutcome })
      .then({
        events: [
          { type: "tool_execution_end", toolCallId: "t1", toolName: "bash", result: lsOutcome.result, isError: false },
          { type: "message_start", message: t1 },
          { type: "message_end", message: t1, entry: atLeaf(log, "d3") },
          { type: "message_start", message: t2 },
          { type: "message_end", message: t2, entry: { id: "d5", parentId: "d3" } },
        ],
      });
  });

  it("sequential mode: a result closes its call at once, end then its toolResult message", () => {
    const t1 = { role: "toolResult", toolCallId: "t1", toolName: "bash", ...contentOf(lsOutcome), timestamp: T0 };
    given(...toolsStarted)
      .whenInput({ kind: "tool_result", toolCallId: "t1", outcome: lsOutcome, mode: "sequential" })
      .then({
        events: [
          { type: "tool_execution_end", toolCallId: "t1", toolName: "bash", result: lsOutcome.result, isError: false },
          { type: "message_start", message: t1 },
          { type: "message_end", message: t1, entry: atLeaf(toolsStarted, "d3") },
        ],
      });
  });

  it("a result for a call that is not pending (late, or a duplicate) decides nothing", () => {
    given(...toolsStarted, {
      type: "tool_execution_end",
      toolCallId: "t1",
      toolName: "bash",
      result: lsOutcome.result,
      isError: false,
    })
      .whenInput({ kind: "tool_result", toolCallId: "t1", outcome: lsOutcome })
      .then({ events: [] });
    given(...idle)
      .whenInput({ kind: "tool_result", toolCallId: "t9", outcome: lsOutcome })
      .then({ events: [] });
  });
});

describe("runtime core / timer", () => {
  const request = {
    type: "tool_approval_requested",
    toolCallId: "t1",
    toolName: "bash",
    args: { command: "ls" },
    rule: { scope: "session", index: 0 },
    expiresAt: T0 + 1_000,
  } as const;

  it("an approval request past its expiresAt expires (distinct from a denial) and releases the gate", () => {
    given(...toolsStarted, request)
      .whenInput({ kind: "timer", timer: "approval_expiry", toolCallId: "t1" }, { now: T0 + 1_000 })
      .then({
        events: [{ type: "tool_approval_resolved", toolCallId: "t1", approved: false, outcome: "expired" }],
        effects: [{ type: "approval_decided", toolCallId: "t1" }],
      });
  });

  it("a timer that fires early, or after a decision, decides nothing", () => {
    given(...toolsStarted, request)
      .whenInput({ kind: "timer", timer: "approval_expiry", toolCallId: "t1" }, { now: T0 + 999 })
      .then({ events: [] });
    given(...toolsStarted, request, { type: "tool_approval_resolved", toolCallId: "t1", approved: true })
      .whenInput({ kind: "timer", timer: "approval_expiry", toolCallId: "t1" }, { now: T0 + 5_000 })
      .then({ events: [] });
  });
});

describe("runtime core / one prompt, input by input", () => {
  it("command → chunks → tool result → the log holds pi's order up to the turn's results", () => {
    const call = assistantMessage([toolCall("t1", "bash", { command: "ls" })], { stopReason: "toolUse" });
    const accepted = given(...idle).whenInput({
      kind: "command",
      input: { ok: true, command: command("prompt", { text: "list" }) },
    });
    expect(accepted.events.map((e) => e.type)).toEqual(["command_accepted"]);
    // The run driver opens the run and delivers the prompt (agent_start, turn_start, the user message).
    const user = { role: "user" as const, content: [textOf("list")], timestamp: T0 };
    const opened = [
      ...idle,
      { type: "command_accepted", commandId: "cmd-1", commandType: "prompt", messages: [user] },
      { type: "agent_start" },
      { type: "turn_start" },
      { type: "message_start", message: user },
      { type: "message_end", message: user },
    ] as EventInput[];
    const started = given(...opened).whenInput({
      kind: "provider_chunk",
      chunk: { type: "start", partial: startOf(call) },
    });
    const ended = given(...opened, { type: "message_start", message: startOf(call) }).whenInput({
      kind: "provider_chunk",
      chunk: { type: "done", reason: "toolUse", message: call },
    });
    const result = given(
      ...opened,
      { type: "message_start", message: startOf(call) },
      { type: "message_end", message: call },
      { type: "tool_execution_start", toolCallId: "t1", toolName: "bash", args: { command: "ls" } },
    ).whenInput({ kind: "tool_result", toolCallId: "t1", outcome: lsOutcome });
    expect([...started.events, ...ended.events, ...result.events].map((e) => e.type)).toEqual([
      "message_start",
      "message_end",
      "tool_execution_end",
      "message_start",
      "message_end",
    ]);
    expect(result.state.status.pendingToolCalls.size).toBe(0);
  });
});
