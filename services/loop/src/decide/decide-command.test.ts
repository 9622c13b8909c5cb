// Specs of the session decider: given a log, when a command arrives, then these events and effects.
import {
  evolveSession,
  type FleetCommand,
  type FleetEvent,
  foldSessionTreeEvents,
  type SessionEntry,
} from "@fleet/protocol";
import {
  assistantMessage,
  CONFIG,
  type EventInput,
  SESSION_ID,
  startOf,
  T0,
  textOf,
  toolCall,
  toolResultMessage,
  userMessage,
} from "@fleet/protocol/testing";
import { describe, expect, it } from "vitest";
import { ENGINE_ERROR_TEXT } from "../session-core/run-refusals.js";
import { command, given, givenLog, HELLO, HI, ONE_RUN, SPEC_DEFAULTS } from "../testing/decider-spec.js";
import { DECIDER_TEXT, MAX_CREATION_WAITS } from "./decide-command.js";

// ---- the states a command meets -------------------------------------------------------------------

const hello = HELLO;
const hi = HI;
const toolUse = assistantMessage([toolCall("t1", "bash", { command: "ls" })]);
const t1Result = toolResultMessage("t1", "bash", "a.txt");

const created: EventInput[] = [{ type: "session_created", config: CONFIG }];
/** One finished run: user `hello`, assistant `hi`. Entries: 2 (user) → 3 (assistant). */
const finishedRun = ONE_RUN;
const runOpen: EventInput[] = [
  { type: "command_accepted", commandId: "c-run", commandType: "prompt" },
  { type: "agent_start" },
  { type: "turn_start" },
  { type: "message_start", message: userMessage("go") },
  { type: "message_end", message: userMessage("go") },
];
const toolsStarted: EventInput[] = [
  ...runOpen,
  { type: "message_start", message: startOf(toolUse) },
  { type: "message_end", message: toolUse },
  { type: "tool_execution_start", toolCallId: "t1", toolName: "bash", args: { command: "ls" } },
];

const STATES = {
  none: [] as EventInput[],
  idle: [...created, ...finishedRun],
  streaming: [...created, ...finishedRun, ...runOpen, { type: "message_start", message: startOf(hi) }] as EventInput[],
  tools_pending: [...created, ...finishedRun, ...toolsStarted],
  awaiting_approval: [
    ...created,
    ...finishedRun,
    ...toolsStarted,
    { type: "tool_approval_requested", toolCallId: "t1", toolName: "bash", args: { command: "ls" } },
  ] as EventInput[],
  between_turns: [
    ...created,
    ...finishedRun,
    ...toolsStarted,
    {
      type: "tool_execution_end",
      toolCallId: "t1",
      toolName: "bash",
      result: { content: [textOf("a.txt")] },
      isError: false,
    },
    { type: "message_start", message: t1Result },
    { type: "message_end", message: t1Result },
    { type: "turn_end", message: toolUse, toolResults: [t1Result] },
  ] as EventInput[],
  compacting: [
    ...created,
    ...finishedRun,
    { type: "command_accepted", commandId: "c-compact", commandType: "compact" },
    { type: "compaction_start", reason: "manual" },
  ] as EventInput[],
} as const;
type StateName = keyof typeof STATES;
const STATE_NAMES = Object.keys(STATES) as StateName[];

/** The id the log builder (seed 9) gives the n-th event of a log. */
const idAt = (n: number) => `0193a009-0000-7000-8000-${n.toString(16).padStart(12, "0")}`;
/** Entry ids of the finished run: the user message and the assistant message. */
const USER_ENTRY = idAt(6);
const ASSISTANT_ENTRY = idAt(8);

// ---- every command in every state ----------------------------------------------------------------

const COMMANDS: Record<string, () => FleetCommand> = {
  create_session: () => command("create_session", {}),
  import_session: () => command("import_session", { entries: [] }),
  prompt: () => command("prompt", { text: "more" }),
  steer: () => command("steer", { text: "s" }),
  follow_up: () => command("follow_up", { text: "f" }),
  next_turn: () => command("next_turn", { text: "n" }),
  continue: () => command("continue"),
  abort: () => command("abort"),
  set_model: () => command("set_model", { provider: "anthropic", modelId: "claude-next" }),
  set_thinking_level: () => command("set_thinking_level", { level: "high" }),
  set_active_tools: () => command("set_active_tools", { toolNames: ["read"] }),
  configure: () => command("configure", { systemPrompt: "Be brief.", thinkingLevel: "low" }),
  compact: () => command("compact"),
  set_compaction_settings: () => command("set_compaction_settings", { keepRecentTokens: 8_000 }),
  navigate: () => command("navigate", { targetId: USER_ENTRY }),
  label: () => command("label", { targetId: USER_ENTRY, label: "start" }),
  set_name: () => command("set_name", { name: "demo" }),
  append_custom: () => command("append_custom", { customType: "ext", data: { a: 1 } }),
  append_message: () =>
    command("append_message", {
      message: { role: "custom", customType: "note", content: "n", display: true, timestamp: 5 },
    }),
  approve_tool_call: () => command("approve_tool_call", { toolCallId: "t1" }),
  deny_tool_call: () => command("deny_tool_call", { toolCallId: "t1", reason: "no" }),
  set_approval_rules: () => command("set_approval_rules", { rules: [{ tool: "bash", action: "ask" }] }),
};

const A = "accepted";
type Expect = typeof A | "busy" | "conflict" | "not_found";
const NF = "not_found" as const;
const B = "busy" as const;
const C = "conflict" as const;
//                              none idle  stream tools approval between compacting
const TABLE: Record<string, Expect[]> = {
  create_session: [A, C, C, C, C, C, C],
  import_session: [A, C, C, C, C, C, C],
  prompt: [A, A, B, B, B, B, B],
  steer: [NF, A, A, A, A, A, A],
  follow_up: [NF, A, A, A, A, A, A],
  next_turn: [NF, A, A, A, A, A, A],
  continue: [NF, C, B, B, B, B, B],
  abort: [NF, A, A, A, A, A, A],
  set_model: [NF, A, A, A, A, A, A],
  set_thinking_level: [NF, A, A, A, A, A, A],
  set_active_tools: [NF, A, A, A, A, A, A],
  configure: [NF, A, A, A, A, A, A],
  compact: [NF, C, B, B, B, B, B],
  set_compaction_settings: [NF, A, A, A, A, A, A],
  navigate: [NF, A, B, B, B, B, B],
  label: [NF, A, A, A, A, A, A],
  set_name: [NF, A, A, A, A, A, A],
  append_custom: [NF, A, A, A, A, A, A],
  append_message: [NF, A, A, A, A, A, A],
  approve_tool_call: [NF, NF, NF, NF, A, NF, NF],
  deny_tool_call: [NF, NF, NF, NF, A, NF, NF],
  set_approval_rules: [NF, A, A, A, A, A, A],
};

describe("session decider / every command in every state", () => {
  it("the table covers every command type", () => {
    expect(Object.keys(TABLE).sort()).toEqual(Object.keys(COMMANDS).sort());
  });

  for (const [type, row] of Object.entries(TABLE)) {
    STATE_NAMES.forEach((stateName, i) => {
      const expected = row[i] as Expect;
      it(`${type} while ${stateName} → ${expected}`, () => {
        const outcome = given(...STATES[stateName]).when((COMMANDS[type] as () => FleetCommand)());
        const first = outcome.events[0];
        if (expected === A) {
          expect(first).toMatchObject({ type: "command_accepted", commandId: "cmd-1", commandType: type });
          // everything else the acceptance appends is marked as the command's
          for (const e of outcome.events.slice(1)) expect(e.meta.commandId).toBe("cmd-1");
        } else {
          outcome.thenRejected(expected);
        }
      });
    });
  }
});

// ---- what each acceptance appends and starts ------------------------------------------------------

describe("session decider / prompt and continue", () => {
  it("a prompt to a new session creates it with the worker's defaults and starts a run", () => {
    given()
      .when(command("prompt", { text: "hi" }))
      .then({
        events: [
          { type: "command_accepted", commandId: "cmd-1", commandType: "prompt", messages: [userMessage("hi", T0)] },
          { type: "session_created", config: SPEC_DEFAULTS },
        ],
        effects: [{ type: "start_run", kind: "prompt", messages: [userMessage("hi", T0)] }],
      });
  });

  it("a prompt while a run is open is busy, with pi's text", () => {
    given(...STATES.streaming)
      .when(command("prompt", { text: "x" }))
      .thenRejected("busy", ENGINE_ERROR_TEXT.promptBusy);
  });

  it("a prompt while a compaction is open is busy", () => {
    given(...STATES.compacting)
      .when(command("prompt", { text: "x" }))
      .thenRejected("busy", DECIDER_TEXT.compacting);
  });

  it("continue from an assistant tail with nothing queued is pi's conflict", () => {
    given(...STATES.idle)
      .when(command("continue"))
      .thenRejected("conflict", ENGINE_ERROR_TEXT.assistantTail);
  });

  it("continue from an assistant tail with a queued follow-up starts a run", () => {
    given(...STATES.idle, { type: "queue_update", steer: [], followUp: [userMessage("fu")], nextTurn: [] })
      .when(command("continue"))
      .then({
        events: [{ type: "command_accepted", commandId: "cmd-1", commandType: "continue" }],
        effects: [{ type: "start_run", kind: "continue" }],
      });
  });

  it("an append_message with triggerTurn while idle starts a run with that message", () => {
    const message = userMessage("from an extension");
    given(...STATES.idle)
      .when(command("append_message", { message, triggerTurn: true }))
      .then({
        events: [{ type: "command_accepted", commandId: "cmd-1", commandType: "append_message", messages: [message] }],
        effects: [{ type: "start_run", kind: "prompt", messages: [message] }],
      });
  });
});

describe("session decider / queues", () => {
  it("a steer mid-run is queued in the log with the queue's full contents, inside the run", () => {
    const outcome = given(...STATES.streaming, {
      type: "queue_update",
      steer: [userMessage("s0")],
      followUp: [],
      nextTurn: [],
    }).when(command("steer", { text: "s1" }));
    outcome.then({
      events: [
        { type: "command_accepted", commandId: "cmd-1", commandType: "steer" },
        { type: "queue_update", steer: [userMessage("s0"), userMessage("s1")], followUp: [], nextTurn: [] },
      ],
    });
    const runId = outcome.state.status.runId;
    expect(runId).toBeDefined();
    expect(outcome.events.map((e) => e.meta.runId)).toEqual([runId, runId]);
  });

  it("deliverAs routes an appended message to its queue", () => {
    const message = { role: "custom" as const, customType: "n", content: "x", display: false, timestamp: 1 };
    given(...STATES.idle)
      .when(command("append_message", { message, deliverAs: "nextTurn" }))
      .then({
        events: [
          { type: "command_accepted", commandId: "cmd-1", commandType: "append_message" },
          { type: "queue_update", steer: [], followUp: [], nextTurn: [message] },
        ],
      });
  });
});

describe("session decider / writes", () => {
  it("idle: the write's entry is appended at once, a child of the leaf", () => {
    given(...STATES.idle)
      .when(command("set_model", { provider: "anthropic", modelId: "claude-next" }))
      .then({
        events: [
          { type: "command_accepted", commandId: "cmd-1", commandType: "set_model" },
          {
            type: "model_change",
            provider: "anthropic",
            modelId: "claude-next",
            entry: { id: "d2", parentId: ASSISTANT_ENTRY },
          },
        ],
      });
  });

  it("mid-run: recorded as pending_write, naming the id of the entry its flush will append", () => {
    const outcome = given(...STATES.tools_pending).when(command("label", { targetId: USER_ENTRY, label: "start" }));
    outcome.then({
      events: [
        { type: "command_accepted", commandId: "cmd-1", commandType: "label" },
        {
          type: "pending_write",
          commandId: "cmd-1",
          write: { type: "label", targetId: USER_ENTRY, label: "start" },
          eventId: "d3",
        },
      ],
    });
    expect(outcome.state.pendingWrites).toEqual([
      { commandId: "cmd-1", eventId: "d3", write: { type: "label", targetId: USER_ENTRY, label: "start" } },
    ]);
  });

  it("a pending write is settled by the event with the id it named", () => {
    const outcome = given(...STATES.tools_pending, {
      type: "pending_write",
      commandId: "c9",
      write: { type: "session_info", name: "later" },
      eventId: "flush-1",
    });
    const state = outcome.state;
    expect(state.pendingWrites).toHaveLength(1);
    const unrelated = { type: "session_info", name: "x", entry: { id: "other", parentId: null }, meta: meta("other") };
    evolveSession(state, unrelated as FleetEvent);
    expect(state.pendingWrites).toHaveLength(1);
    const flushed = {
      type: "session_info",
      name: "later",
      entry: { id: "flush-1", parentId: null },
      meta: meta("flush-1"),
    };
    evolveSession(state, flushed as FleetEvent);
    expect(state.pendingWrites).toHaveLength(0);
  });

  it("configure mid-run: its tree settings wait, its config_change is appended at once", () => {
    given(...STATES.between_turns)
      .when(command("configure", { systemPrompt: "Be brief.", thinkingLevel: "low" }))
      .then({
        events: [
          { type: "command_accepted", commandId: "cmd-1", commandType: "configure" },
          {
            type: "pending_write",
            commandId: "cmd-1",
            write: { type: "thinking_level_change", thinkingLevel: "low" },
            eventId: "d3",
          },
          { type: "config_change", systemPrompt: "Be brief." },
        ],
        effects: [{ type: "config_changed", systemPrompt: "Be brief." }],
      });
  });

  it("unknown tools and unknown entries are not_found", () => {
    given(...STATES.idle)
      .when(command("set_active_tools", { toolNames: ["read", "nope", "gone"] }))
      .thenRejected("not_found", "Unknown tools: nope, gone");
    given(...STATES.idle)
      .when(command("configure", { activeTools: ["nope"] }))
      .thenRejected("not_found", "Unknown tool: nope");
    given(...STATES.idle)
      .when(command("label", { targetId: "missing", label: "x" }))
      .thenRejected("not_found", "Entry missing not found");
  });
});

describe("session decider / abort", () => {
  it("idle: accepted, nothing to cancel", () => {
    given(...STATES.idle)
      .when(command("abort"))
      .then({ events: [{ type: "command_accepted", commandId: "cmd-1", commandType: "abort" }], effects: [] });
  });

  it("mid-run: cancels the run, and the log says the run was aborted (a new owner carries it on aborted)", () => {
    const outcome = given(...STATES.awaiting_approval).when(command("abort"));
    outcome.then({
      events: [{ type: "command_accepted", commandId: "cmd-1", commandType: "abort" }],
      effects: [{ type: "abort_run" }],
    });
    expect(outcome.state.cursor).toMatchObject({ kind: "tools_pending", abortRequested: true });
  });

  it("while a standalone compaction is open: cancels the compaction", () => {
    const outcome = given(...STATES.compacting).when(command("abort"));
    outcome.then({
      events: [{ type: "command_accepted", commandId: "cmd-1", commandType: "abort" }],
      effects: [{ type: "abort_compaction" }],
    });
    expect(outcome.state.compaction?.abortRequested).toBe(true);
  });
});

describe("session decider / approvals", () => {
  it("a decision on a waiting call is logged and releases the gate", () => {
    const outcome = given(...STATES.awaiting_approval).when(
      command("deny_tool_call", { toolCallId: "t1", reason: "no" }),
    );
    outcome.then({
      events: [
        { type: "command_accepted", commandId: "cmd-1", commandType: "deny_tool_call" },
        { type: "tool_approval_resolved", toolCallId: "t1", approved: false, reason: "no" },
      ],
      effects: [{ type: "approval_decided", toolCallId: "t1" }],
    });
    expect(outcome.state.approvals.get("t1")?.decision).toEqual({ approved: false, outcome: "denied", reason: "no" });
  });

  it("a second decision, or one for a call that does not wait, is not_found", () => {
    given(...STATES.awaiting_approval, { type: "tool_approval_resolved", toolCallId: "t1", approved: true })
      .when(command("approve_tool_call", { toolCallId: "t1" }))
      .thenRejected("not_found", DECIDER_TEXT.notWaiting("t1"));
    given(...STATES.awaiting_approval)
      .when(command("approve_tool_call", { toolCallId: "t2" }))
      .thenRejected("not_found", DECIDER_TEXT.notWaiting("t2"));
  });
});

describe("session decider / compaction", () => {
  const long = (n: number) => userMessage(`${"x".repeat(40_000)} ${n}`);
  const bigSession: EventInput[] = [
    ...created,
    ...[1, 2, 3].flatMap((n): EventInput[] => [
      { type: "message_end", message: long(n) },
      { type: "message_end", message: assistantMessage([textOf(`ok ${n}`)]) },
    ]),
  ];

  it("idle with enough history: compaction_start, then the summary effect (the entry and compaction_end follow)", () => {
    const outcome = given(...bigSession).when(command("compact", { instructions: "keep names" }));
    expect(outcome.events.map((e) => e.type)).toEqual(["command_accepted", "compaction_start"]);
    const start = outcome.events[1] as FleetEvent;
    // a standalone compaction is an open operation of its own: its events carry its id as runId
    expect(start.meta.runId).toBe(start.meta.id);
    const effect = outcome.decision.kind === "decided" ? outcome.decision.effects[0] : undefined;
    expect(effect).toEqual({ type: "compact", compactionId: start.meta.id });
    // the log holds everything the compaction needs, the command's focus included
    expect(start).toMatchObject({ type: "compaction_start", reason: "manual", instructions: "keep names" });
    expect(outcome.state.compaction).toMatchObject({
      id: start.meta.id,
      reason: "manual",
      runId: undefined,
      instructions: "keep names",
      entryId: undefined,
    });
  });

  it("too little history is pi's conflict", () => {
    given(...STATES.idle)
      .when(command("compact"))
      .thenRejected("conflict", "Nothing to compact (session too small)");
  });
});

describe("session decider / compaction settings", () => {
  it("set_compaction_settings merges into the settings in force and appends them whole, at once even mid-run", () => {
    given(...STATES.idle)
      .when(command("set_compaction_settings", { reserveTokens: 4_096 }))
      .then({
        events: [
          { type: "command_accepted", commandId: "cmd-1", commandType: "set_compaction_settings" },
          { type: "config_change", compaction: { enabled: true, reserveTokens: 4_096, keepRecentTokens: 20_000 } },
        ],
      });
    const midRun = given(...STATES.streaming).when(command("set_compaction_settings", { enabled: false }));
    expect(midRun.events[1]).toMatchObject({ type: "config_change", compaction: { enabled: false } });
    expect(midRun.state.tree.config?.compaction).toEqual({
      enabled: false,
      reserveTokens: 16_384,
      keepRecentTokens: 20_000,
    });
  });

  it("configure {compaction} changes them too; a redelivered one appends nothing twice", () => {
    const outcome = given(...STATES.idle).when(
      command("configure", { compaction: { enabled: true, reserveTokens: 1, keepRecentTokens: 2 } }),
    );
    expect(outcome.events.map((e) => e.type)).toEqual(["command_accepted", "config_change"]);
    expect(outcome.state.tree.config?.compaction).toEqual({ enabled: true, reserveTokens: 1, keepRecentTokens: 2 });
    const cmd = command("set_compaction_settings", { enabled: false });
    const once = given(...STATES.idle).when(cmd).events;
    givenLog([...given(...STATES.idle).log, ...once])
      .whenRedelivered(cmd)
      .then({ events: [] });
  });
});

describe("session decider / navigate", () => {
  it("to a user message re-opens it for editing: the leaf moves to its parent", () => {
    given(...STATES.idle)
      .when(command("navigate", { targetId: USER_ENTRY }))
      .then({
        events: [
          { type: "command_accepted", commandId: "cmd-1", commandType: "navigate" },
          { type: "leaf", targetId: null },
        ],
      });
  });

  it("with summarize: needs the summary first; then a branch_summary under the new leaf, labelled", () => {
    const log = given(...STATES.idle);
    const cmd = command("navigate", { targetId: USER_ENTRY, summarize: true, label: "retry" });
    expect(log.when(cmd).decision).toMatchObject({ kind: "needs_branch_summary", model: CONFIG.model });
    log.when(cmd, { branchSummary: { ok: true, summary: "tried hi" } }).then({
      events: [
        { type: "command_accepted", commandId: "cmd-1", commandType: "navigate" },
        { type: "branch_summary", fromId: "root", summary: "tried hi", entry: { id: "d2", parentId: null } },
        { type: "label", targetId: "d2", label: "retry", entry: { id: "d3", parentId: "d2" } },
      ],
    });
    log
      .when(cmd, { branchSummary: { ok: false, error: "Summarization failed: boom" } })
      .thenRejected("conflict", "Summarization failed: boom");
  });

  it("to an unknown entry is not_found", () => {
    given(...STATES.idle)
      .when(command("navigate", { targetId: "nope" }))
      .thenRejected("not_found", "Entry nope not found");
  });
});

describe("session decider / create, fork, import", () => {
  it("create_session applies the config patch to the defaults", () => {
    given()
      .when(command("create_session", { config: { thinkingLevel: "high" } }))
      .then({
        events: [
          { type: "command_accepted", commandId: "cmd-1", commandType: "create_session" },
          { type: "session_created", config: { ...SPEC_DEFAULTS, thinkingLevel: "high" } },
        ],
      });
  });

  it("a fork needs the source's tree, then copies its root→entry path with fresh ids", () => {
    const source = foldSessionTreeEvents(given(...STATES.idle).log);
    const cmd = command("create_session", { forkFrom: { sessionId: "s-src", entryId: USER_ENTRY } });
    expect(given().when(cmd).decision).toEqual({ kind: "needs_fork_source", sessionId: "s-src" });
    given()
      .when(cmd, { forkSource: source })
      .then({
        events: [
          { type: "command_accepted", commandId: "cmd-1", commandType: "create_session" },
          { type: "session_created", config: CONFIG, forkedFrom: { sessionId: "s-src", entryId: USER_ENTRY } },
          { type: "message_end", message: hello, entry: { id: "d3", parentId: null } },
        ],
      });
    given().when(cmd, { forkSource: null }).thenRejected("not_found", "Session s-src not found");
    given()
      .when(command("create_session", { forkFrom: { sessionId: "s-src", entryId: "nope" } }), { forkSource: source })
      .thenRejected("not_found", "Entry nope not found");
  });

  it("an import re-mints ids, keeps the shape, and moves the leaf when it is not the last entry", () => {
    const entries: SessionEntry[] = [
      { type: "message", id: "a", parentId: null, timestamp: 1, message: hello },
      { type: "message", id: "b", parentId: "a", timestamp: 2, message: hi },
      { type: "label", id: "c", parentId: "b", timestamp: 3, targetId: "a", label: "first" },
    ];
    given()
      .when(command("import_session", { entries, leafId: "b" }))
      .then({
        events: [
          { type: "command_accepted", commandId: "cmd-1", commandType: "import_session" },
          { type: "session_created", config: SPEC_DEFAULTS },
          { type: "message_end", message: hello, entry: { id: "d3", parentId: null } },
          { type: "message_end", message: hi, entry: { id: "d4", parentId: "d3" } },
          { type: "label", targetId: "d3", label: "first", entry: { id: "d5", parentId: "d4" } },
          { type: "leaf", targetId: "d4" },
        ],
      });
    given()
      .when(command("import_session", { entries: [entries[0] as SessionEntry, entries[0] as SessionEntry] }))
      .thenRejected("invalid", "duplicate entry id a");
    given()
      .when(command("import_session", { entries: [entries[1] as SessionEntry] }))
      .thenRejected("invalid", "entry b comes before its parent a");
    given()
      .when(command("import_session", { entries, leafId: "zz" }))
      .thenRejected("not_found", "Entry zz not found");
  });
});

describe("session decider / bad input", () => {
  it("a command for another session is invalid", () => {
    given(...STATES.idle)
      .when({ ...command("abort"), sessionId: "other" } as FleetCommand)
      .thenRejected("invalid", /differs from the subject's session/);
  });

  it("an undecodable command is rejected with the code the decoder gave", () => {
    given(...STATES.idle)
      .when({ ok: false, commandId: "seq:7", commandType: "unknown", code: "invalid", reason: "not JSON" })
      .then({
        events: [
          { type: "command_rejected", commandId: "seq:7", commandType: "unknown", code: "invalid", reason: "not JSON" },
        ],
      });
    given(...STATES.idle)
      .when({
        ok: false,
        commandId: "c",
        commandType: "fly",
        code: "unsupported",
        reason: "unsupported command type fly",
      })
      .thenRejected("unsupported");
  });
});

describe("session decider / a command redelivered after a crash", () => {
  it("a rejected or completely accepted command decides nothing", () => {
    given(...STATES.idle, {
      type: "command_rejected",
      commandId: "cmd-1",
      commandType: "steer",
      code: "invalid",
      reason: "x",
    })
      .whenRedelivered(command("steer", { text: "s" }))
      .then({ events: [] });
    const accepted = given(...STATES.idle).when(command("set_model", { provider: "a", modelId: "b" })).events;
    givenLog([...given(...STATES.idle).log, ...accepted])
      .whenRedelivered(command("set_model", { provider: "a", modelId: "b" }))
      .then({ events: [] });
  });

  it("a prompt accepted but never started is started", () => {
    given(...STATES.idle, { type: "command_accepted", commandId: "cmd-1", commandType: "prompt" })
      .whenRedelivered(command("prompt", { text: "again" }))
      .then({ events: [], effects: [{ type: "start_run", kind: "prompt", messages: [userMessage("again", T0)] }] });
  });

  it("a prompt accepted with its input but never started is started with the logged input", () => {
    const logged = userMessage("first", T0 - 5_000);
    given(...STATES.idle, { type: "command_accepted", commandId: "cmd-1", commandType: "prompt", messages: [logged] })
      .whenRedelivered(command("prompt", { text: "first" }))
      .then({ events: [], effects: [{ type: "start_run", kind: "prompt", messages: [logged] }] });
  });

  it("a prompt whose run started decides nothing: the resumed run delivers the logged input", () => {
    const logged = userMessage("first", T0 - 5_000);
    const started = given(
      ...STATES.idle,
      { type: "command_accepted", commandId: "cmd-1", commandType: "prompt", messages: [logged] },
      { type: "agent_start" },
    );
    started.whenRedelivered(command("prompt", { text: "first" })).then({ events: [], effects: [] });
    expect(started.state.cursor).toMatchObject({ kind: "run_started", undelivered: [logged] });
  });

  it("a command meeting a creation whose session_created was cut waits for it; the creation's redelivery completes it", () => {
    const cut = given({ type: "command_accepted", commandId: "c-create", commandType: "create_session" });
    const waiting = cut.when(command("abort", { id: "c-abort" }));
    expect(waiting.decision).toEqual({ kind: "after_creation", commandId: "c-create" });
    expect(waiting.events).toEqual([]);
    // a prompt (or any creating command) would create a second session: it waits too
    expect(cut.when(command("prompt", { id: "c-p", text: "go" })).decision).toEqual({
      kind: "after_creation",
      commandId: "c-create",
    });
    const completed = cut.whenRedelivered(command("create_session", { id: "c-create", config: CONFIG }));
    expect(completed.events.map((e) => e.type)).toEqual(["session_created"]);
    givenLog([...cut.log, ...completed.events])
      .when(command("abort", { id: "c-abort" }))
      .then({ events: [{ type: "command_accepted", commandId: "c-abort", commandType: "abort" }], effects: [] });
    // bounded: a creation whose command the stream lost would hold the session's commands forever
    expect(cut.when(command("abort", { id: "c-abort" }), { deliveries: MAX_CREATION_WAITS - 1 }).decision.kind).toBe(
      "after_creation",
    );
    cut.when(command("abort", { id: "c-abort" }), { deliveries: MAX_CREATION_WAITS }).thenRejected("not_found");
    // a rejected creation leaves no session: the command is not_found as before
    given({
      type: "command_rejected",
      commandId: "c-create",
      commandType: "create_session",
      code: "invalid",
      reason: "x",
    })
      .when(command("abort", { id: "c-abort" }))
      .thenRejected("not_found");
  });

  it("a redelivered abort aborts the run it was accepted in, never a later run", () => {
    const abortAccepted: EventInput = { type: "command_accepted", commandId: "cmd-1", commandType: "abort" };
    // accepted in the open run, whose abort a crash kept from reaching the engine: aborted now
    given(...STATES.streaming, abortAccepted)
      .whenRedelivered(command("abort"))
      .then({ events: [], effects: [{ type: "abort_run" }] });
    // accepted in a run that has ended since; another run is open now (seen in chaos: a swept
    // intake delivered the abort 21 s later and it aborted the next run's tool calls)
    const later = given(
      ...STATES.streaming,
      abortAccepted,
      { type: "message_end", message: hi },
      { type: "turn_end", message: hi, toolResults: [] },
      { type: "agent_end", messages: [userMessage("go"), hi] },
      { type: "command_accepted", commandId: "c-next", commandType: "prompt" },
      { type: "agent_start" },
      { type: "turn_start" },
    );
    later.whenRedelivered(command("abort")).then({ events: [], effects: [] });
    // accepted while idle: no run is its
    given(...STATES.idle, abortAccepted, ...runOpen)
      .whenRedelivered(command("abort"))
      .then({ events: [], effects: [] });
  });

  it("a steer whose queue_update was cut is queued now", () => {
    given(...STATES.streaming, { type: "command_accepted", commandId: "cmd-1", commandType: "steer" })
      .whenRedelivered(command("steer", { text: "s" }))
      .then({ events: [{ type: "queue_update", steer: [userMessage("s", T0)], followUp: [], nextTurn: [] }] });
  });

  it("a mid-run write whose pending_write was cut is recorded now; one that has it, is not recorded twice", () => {
    const cmd = command("set_model", { provider: "anthropic", modelId: "claude-next" });
    const cut = given(...STATES.streaming, { type: "command_accepted", commandId: "cmd-1", commandType: "set_model" });
    const completed = cut.whenRedelivered(cmd);
    expect(completed.events.map((e) => [e.type, e.meta.commandId])).toEqual([["pending_write", "cmd-1"]]);
    // after that, the same command again decides nothing
    expect(completed.state.commands.get("cmd-1")?.events).toBe(1);
  });

  it("an approval decision whose event was cut is logged now", () => {
    given(...STATES.awaiting_approval, {
      type: "command_accepted",
      commandId: "cmd-1",
      commandType: "approve_tool_call",
    })
      .whenRedelivered(command("approve_tool_call", { toolCallId: "t1" }))
      .then({
        events: [{ type: "tool_approval_resolved", toolCallId: "t1", approved: true }],
        effects: [{ type: "approval_decided", toolCallId: "t1" }],
      });
  });

  it("an import cut after some entries appends the rest, linked to the ids already appended", () => {
    const entries: SessionEntry[] = [
      { type: "message", id: "a", parentId: null, timestamp: 1, message: hello },
      { type: "message", id: "b", parentId: "a", timestamp: 2, message: hi },
      { type: "label", id: "c", parentId: "b", timestamp: 3, targetId: "a", label: "first" },
    ];
    const cmd = command("import_session", { entries });
    const whole = given().when(cmd).events;
    // the worker died after command_accepted, session_created and the first entry (id d3)
    const resumed = givenLog(whole.slice(0, 3)).whenRedelivered(cmd);
    expect(resumed.events.map((e) => [e.type, "entry" in e ? e.entry : null, e.meta.commandId])).toEqual([
      ["message_end", { id: "d5", parentId: "d3" }, "cmd-1"],
      ["label", { id: "d6", parentId: "d5" }, "cmd-1"],
    ]);
    expect((resumed.events[1] as { targetId?: string }).targetId).toBe("d3");
    // once complete, a redelivery appends nothing more
    givenLog([...whole.slice(0, 3), ...resumed.events])
      .whenRedelivered(cmd)
      .then({ events: [] });
  });
});

// ---- helpers ------------------------------------------------------------------------------------

const meta = (id: string) => ({ v: 1 as const, id, sessionId: SESSION_ID, ts: T0, producer: "x" });
