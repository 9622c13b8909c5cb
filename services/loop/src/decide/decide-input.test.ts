// Specs of the runtime core: given a log, when an input of any kind arrives (a command, a provider
// chunk, a tool result, a timer, a turn's end, a turn boundary), then these events and effects. No server, no clock: time and ids
// are the spec's.
import { ABORTED_ERROR_MESSAGE, runCursorOf } from "@fleet/protocol";
import {
  assistantMessage,
  CONFIG,
  createLogBuilder,
  type EventInput,
  startOf,
  T0,
  textOf,
  toolCall,
  userMessage,
} from "@fleet/protocol/testing";
import { describe, expect, it } from "vitest";
import { command, given, givenLog, ONE_RUN, secondRunStarted, withoutMeta } from "../testing/decider-spec.js";

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

  it("a delta's decision does not depend on the deltas before it: the fold may hold them back (coalesced)", () => {
    const opened = { type: "text_start", contentIndex: 0 } as const;
    const more = { type: "text_delta", contentIndex: 0, delta: "lo" } as const;
    const folded: EventInput[] = [
      ...streaming,
      { type: "message_update", deltas: [opened, { type: "text_delta", contentIndex: 0, delta: "hel" }] },
    ];
    given(...folded)
      .whenInput({ kind: "provider_chunk", chunk: more })
      .then({ events: [{ type: "message_update", deltas: [more] }] });
    given(...streaming)
      .whenInput({ kind: "provider_chunk", chunk: more })
      .then({ events: [{ type: "message_update", deltas: [more] }] });
    // A delta naming no block of the message is still logged (pi emits it; applying it changes nothing).
    const stray = { type: "text_delta", contentIndex: 5, delta: "?" } as const;
    given(...streaming)
      .whenInput({ kind: "provider_chunk", chunk: stray })
      .then({ events: [{ type: "message_update", deltas: [stray] }] });
  });

  it("a delta while the fold streams no assistant message (a user message open, or the run ended) decides nothing", () => {
    const delta = { type: "text_delta", contentIndex: 0, delta: "x" } as const;
    given(...turnOpen, { type: "message_start", message: userMessage("late") })
      .whenInput({ kind: "provider_chunk", chunk: delta })
      .then({ events: [] });
    given(...idle)
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

describe("runtime core / turn end", () => {
  const answered: EventInput[] = [...streaming, { type: "message_end", message: answer }];
  const setModel = { type: "model_change", provider: "anthropic", modelId: "claude-next" } as const;

  it("an answer with nothing to run: turn_end, then the writes deferred during the turn are flushed", () => {
    const log: EventInput[] = [...answered, { type: "pending_write", commandId: "c9", write: setModel, eventId: "w1" }];
    given(...log)
      .whenInput({ kind: "turn_end" })
      .then({
        events: [
          { type: "turn_end", message: answer, toolResults: [] },
          { ...setModel, entry: atLeaf(log, "w1") },
        ],
      });
  });

  it("a terminal message ends the run at its turn: turn_end, then agent_end with the run's messages", () => {
    const failed = assistantMessage([textOf("hel")], { stopReason: "error", errorMessage: "overloaded" });
    given(
      ...streaming.slice(0, -1),
      { type: "message_start", message: startOf(failed) },
      {
        type: "message_end",
        message: failed,
      },
    )
      .whenInput({ kind: "turn_end" })
      .then({
        events: [
          { type: "turn_end", message: failed, toolResults: [] },
          { type: "agent_end", messages: [go, failed] },
        ],
      });
  });

  it("an abort accepted during the turn ends the run at turn_end, before the turn hooks", () => {
    given(
      ...streaming,
      { type: "command_accepted", commandId: "c2", commandType: "abort" },
      {
        type: "message_end",
        message: answer,
      },
    )
      .whenInput({ kind: "turn_end" })
      .then({
        events: [
          { type: "turn_end", message: answer, toolResults: [] },
          { type: "agent_end", messages: [go, answer] },
        ],
      });
  });

  it("after tool calls, once every toolResult message ended: turn_end with them in source order", () => {
    const t1 = { role: "toolResult", toolCallId: "t1", toolName: "bash", ...contentOf(lsOutcome), timestamp: T0 };
    const t2 = { role: "toolResult", toolCallId: "t2", toolName: "read", ...contentOf(readOutcome), timestamp: T0 };
    const ended: EventInput[] = [
      ...toolsStarted,
      { type: "tool_execution_end", toolCallId: "t2", toolName: "read", result: readOutcome.result, isError: false },
      { type: "tool_execution_end", toolCallId: "t1", toolName: "bash", result: lsOutcome.result, isError: false },
      { type: "message_start", message: t1 } as EventInput,
      { type: "message_end", message: t1 } as EventInput,
    ];
    given(...ended)
      .whenInput({ kind: "turn_end" })
      .then({ events: [] });
    given(
      ...ended,
      { type: "message_start", message: t2 } as EventInput,
      { type: "message_end", message: t2 } as EventInput,
    )
      .whenInput({ kind: "turn_end" })
      .then({ events: [{ type: "turn_end", message: twoCalls, toolResults: [t1, t2] }] });
  });

  it("while the call streams, or between turns: nothing", () => {
    given(...streaming)
      .whenInput({ kind: "turn_end" })
      .then({ events: [] });
    given(...answered, { type: "turn_end", message: answer, toolResults: [] })
      .whenInput({ kind: "turn_end" })
      .then({ events: [] });
  });
});

describe("runtime core / turn boundary", () => {
  const s1 = userMessage("steer one");
  const s2 = userMessage("steer two");
  const f1 = userMessage("then this");
  const f2 = userMessage("and this");
  const queued = (steer: unknown[], followUp: unknown[]): EventInput =>
    ({ type: "queue_update", steer, followUp, nextTurn: [] }) as EventInput;
  /** The second run with `extra` logged during its turn, right up to its `turn_end`. */
  const turnEnded = (...extra: EventInput[]): EventInput[] => [
    ...streaming,
    ...extra,
    { type: "message_end", message: answer },
    { type: "turn_end", message: answer, toolResults: [] },
  ];

  it("nothing queued and no tool results: the run ends with its messages", () => {
    given(...turnEnded())
      .whenInput({ kind: "turn_boundary", stop: false })
      .then({ events: [{ type: "agent_end", messages: [go, answer] }] });
  });

  it("a message a session write logged at the turn's flush is not the run's: agent_end leaves it out (pi's newMessages)", () => {
    const note = userMessage("a note");
    const write = { type: "message", message: note } as const;
    /** The run's turn with `note` written during it and flushed after its `turn_end`. */
    const build = (eventId: string) => {
      const log = createLogBuilder(9);
      for (const e of turnEnded({ type: "pending_write", commandId: "c5", write, eventId })) log.add(e);
      log.add({ type: "message_start", message: note } as EventInput);
      const id = log.nextId();
      log.add({ type: "message_end", message: note } as EventInput);
      return { events: log.events, id };
    };
    const { events } = build(build("unknown").id);
    // The note's message_end settled its write.
    expect(givenLog(events.slice(0, -1)).state.pendingWrites).toHaveLength(1);
    expect(givenLog(events).state.pendingWrites).toEqual([]);
    givenLog(events)
      .whenInput({ kind: "turn_boundary", stop: false })
      .then({ events: [{ type: "agent_end", messages: [go, answer] }] });
  });

  it("steering, one at a time: turn_start, the drain naming the head, the head delivered; the rest stays", () => {
    const log = turnEnded(queued([s1, s2], []));
    const outcome = given(...log)
      .whenInput({ kind: "turn_boundary", stop: false })
      .then({
        events: [
          { type: "turn_start" },
          { type: "queue_update", steer: [s2], followUp: [], nextTurn: [], delivering: [s1] },
          { type: "message_start", message: s1 },
          { type: "message_end", message: s1, entry: atLeaf(log, "d4") },
        ],
      });
    expect(outcome.state.status.queues.steer).toEqual([s2]);
    expect(runCursorOf(outcome.state).kind).toBe("awaiting_llm");
  });

  it("shouldStopAfterTurn ends the run before any poll: the steering stays queued", () => {
    const outcome = given(...turnEnded(queued([s1], [])))
      .whenInput({ kind: "turn_boundary", stop: true })
      .then({ events: [{ type: "agent_end", messages: [go, answer] }] });
    expect(outcome.state.status.queues.steer).toEqual([s1]);
  });

  it("follow-ups only when no steering and no tool results; mode `all` delivers every one", () => {
    const log = turnEnded({ type: "config_change", followUpMode: "all" }, queued([], [f1, f2]));
    given(...log)
      .whenInput({ kind: "turn_boundary", stop: false })
      .then({
        events: [
          { type: "turn_start" },
          { type: "queue_update", steer: [], followUp: [], nextTurn: [], delivering: [f1, f2] },
          { type: "message_start", message: f1 },
          { type: "message_end", message: f1, entry: atLeaf(log, "d4") },
          { type: "message_start", message: f2 },
          { type: "message_end", message: f2, entry: { id: "d6", parentId: "d4" } },
        ],
      });
    const steered = turnEnded(queued([s1], [f1]));
    given(...steered)
      .whenInput({ kind: "turn_boundary", stop: false })
      .then({
        events: [
          { type: "turn_start" },
          { type: "queue_update", steer: [], followUp: [f1], nextTurn: [], delivering: [s1] },
          { type: "message_start", message: s1 },
          { type: "message_end", message: s1, entry: atLeaf(steered, "d4") },
        ],
      });
  });

  it("a turn that ran tools goes on to the next LLM call with nothing queued: turn_start alone", () => {
    const call = assistantMessage([toolCall("t1", "bash", { command: "ls" })], { stopReason: "toolUse" });
    const t1 = { role: "toolResult", toolCallId: "t1", toolName: "bash", ...contentOf(lsOutcome), timestamp: T0 };
    given(
      ...turnOpen,
      { type: "message_start", message: startOf(call) },
      { type: "message_end", message: call },
      { type: "tool_execution_start", toolCallId: "t1", toolName: "bash", args: { command: "ls" } },
      { type: "tool_execution_end", toolCallId: "t1", toolName: "bash", result: lsOutcome.result, isError: false },
      { type: "message_start", message: t1 } as EventInput,
      { type: "message_end", message: t1 } as EventInput,
      { type: "turn_end", message: call, toolResults: [t1] } as EventInput,
    )
      .whenInput({ kind: "turn_boundary", stop: false })
      .then({ events: [{ type: "turn_start" }] });
  });

  it("an accepted abort ends the run whatever the hooks said; writes deferred meanwhile flush before agent_end", () => {
    const label = { type: "session_info", name: "renamed" } as const;
    const log: EventInput[] = [
      ...turnEnded(queued([s1], [])),
      { type: "command_accepted", commandId: "c2", commandType: "abort" },
      { type: "pending_write", commandId: "c3", write: label, eventId: "w1" },
    ];
    given(...log)
      .whenInput({ kind: "turn_boundary", stop: false })
      .then({
        events: [
          { ...label, entry: atLeaf(log, "w1") },
          { type: "agent_end", messages: [go, answer] },
        ],
      });
  });

  it("anywhere but between turns: nothing", () => {
    given(...streaming)
      .whenInput({ kind: "turn_boundary", stop: false })
      .then({ events: [] });
    given(...idle)
      .whenInput({ kind: "turn_boundary", stop: false })
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
    const finished = [
      ...opened,
      { type: "message_start", message: startOf(call) },
      { type: "message_end", message: call },
      { type: "tool_execution_start", toolCallId: "t1", toolName: "bash", args: { command: "ls" } },
      ...result.events.map(withoutMeta),
    ] as EventInput[];
    const turnEnd = given(...finished).whenInput({ kind: "turn_end" });
    const next = given(...finished, ...(turnEnd.events.map(withoutMeta) as EventInput[])).whenInput({
      kind: "turn_boundary",
      stop: false,
    });
    expect([...turnEnd.events, ...next.events].map((e) => e.type)).toEqual(["turn_end", "turn_start"]);
  });
});
