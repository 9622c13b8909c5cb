// Specs of sub-agents in the decider (change 57): a child's creation names its parent, an `agent`
// call becomes the child's commands or an error result, the parent's abort becomes a close command.
import {
  AGENT_TOOL_NAME,
  type AgentVersion,
  agentSessionConfig,
  childCommandIds,
  childSessionId,
  emptySpend,
  type ParentLink,
  runCursorOf,
} from "@fleet/protocol";
import {
  assistantMessage,
  CONFIG,
  type EventInput,
  SESSION_ID,
  startOf,
  textOf,
  toolCall,
  userMessage,
} from "@fleet/protocol/testing";
import { describe, expect, it } from "vitest";
import { agentCallOrdinal } from "../sub-agents/agent-call-ordinal.js";
import { command, given, SPEC_DEFAULTS } from "../testing/decider-spec.js";
import {
  CHILD_TEXT,
  childPromptRefusal,
  childrenToClose,
  decideChildCall,
  decideChildClose,
  type SubAgentLimits,
} from "./decide-child.js";

const LINK: ParentLink = {
  sessionId: "parent-1",
  runId: "run-1",
  toolCallId: "tc-1",
  depth: 1,
  closePolicy: "terminate",
};
const LIMITS: SubAgentLimits = { maxDepth: 3, maxFanOut: 8, closePolicy: "terminate" };
const WORKER: AgentVersion = {
  name: "worker",
  version: 1,
  settings: { systemPrompt: "You do one task." },
  createdAt: 1,
};

describe("sub-agents / create_session {parent}", () => {
  it("the child's session_created names its parent's session, run, call, depth and close policy", () => {
    const outcome = given()
      .when(command("create_session", { parent: LINK }))
      .then({
        events: [
          { type: "command_accepted", commandId: "cmd-1", commandType: "create_session" },
          { type: "session_created", config: SPEC_DEFAULTS, parent: LINK },
        ],
      });
    expect(outcome.state.parent).toEqual(LINK);
  });

  it("with an agent: the version's config and the parent link together", () => {
    const outcome = given().when(command("create_session", { agent: "worker", parent: LINK }), {
      agentVersion: WORKER,
    });
    expect(outcome.events[1]).toMatchObject({
      type: "session_created",
      config: agentSessionConfig(SPEC_DEFAULTS, WORKER.settings),
      agent: { name: "worker", version: 1 },
      parent: LINK,
    });
  });

  it("cut after its outcome (a crash): the redelivery completes session_created with its config and parent link", () => {
    const budget = { run: { totalTokens: 500 } };
    const create = command("create_session", { parent: LINK, config: { budget } });
    const first = given().when(create);
    // Only the outcome reached the log; the command comes again.
    const cut = given({ type: "command_accepted", commandId: "cmd-1", commandType: "create_session" });
    cut.whenRedelivered(create).then({
      events: [{ type: "session_created", config: { ...SPEC_DEFAULTS, budget }, parent: LINK }],
    });
    expect(first.events[1]).toMatchObject({ config: { budget }, parent: LINK });
    // With an agent too.
    const withAgent = command("create_session", { agent: "worker", parent: LINK });
    given({ type: "command_accepted", commandId: "cmd-1", commandType: "create_session" })
      .whenRedelivered(withAgent, { agentVersion: WORKER })
      .then({
        events: [
          {
            type: "session_created",
            config: agentSessionConfig(SPEC_DEFAULTS, WORKER.settings),
            agent: { name: "worker", version: 1 },
            parent: LINK,
          },
        ],
      });
  });

  it("a child whose close came before its create (a deposed owner's late create) is not created", () => {
    const ids = childCommandIds(SESSION_ID);
    given({ type: "command_rejected", commandId: ids.abort, commandType: "abort", code: "not_found", reason: "x" })
      .when({ ...command("create_session", { parent: LINK }), id: ids.create })
      .thenRejected("conflict", CHILD_TEXT.closedFirst);
  });

  it("a child's task that comes after its close (a deposed owner's late prompt) starts no run", () => {
    const ids = childCommandIds(SESSION_ID);
    given(
      { type: "session_created", config: CONFIG, parent: LINK },
      { type: "command_accepted", commandId: ids.abort, commandType: "abort" },
    )
      .when({ ...command("prompt", { text: "task" }), id: ids.prompt })
      .thenRejected("conflict", CHILD_TEXT.closedFirst);
  });

  it("a child that exists is command_rejected conflict (a second start changes nothing); with forkFrom invalid", () => {
    given({ type: "session_created", config: CONFIG, parent: LINK })
      .when(command("create_session", { parent: LINK }))
      .thenRejected("conflict", /exists/);
    given()
      .when(command("create_session", { parent: LINK, forkFrom: { sessionId: "s-src", entryId: "e1" } }))
      .thenRejected("invalid", CHILD_TEXT.withFork);
  });
});

describe("sub-agents / an agent call", () => {
  const base = {
    parentSessionId: SESSION_ID,
    parentLink: null,
    runId: "run-7",
    toolCallId: "toolu_1",
    args: { agent: "worker", prompt: "count to three" },
    ordinal: 0,
    limits: LIMITS,
  };

  it("starts the child whose id derives from the parent's session and call: create_session {agent, parent}, then prompt", () => {
    const decision = decideChildCall(base);
    const childId = childSessionId(SESSION_ID, "toolu_1");
    const ids = childCommandIds(childId);
    expect(decision).toEqual({
      kind: "start",
      childId,
      link: { sessionId: SESSION_ID, runId: "run-7", toolCallId: "toolu_1", depth: 1, closePolicy: "terminate" },
      commands: [
        {
          type: "create_session",
          id: ids.create,
          sessionId: childId,
          agent: "worker",
          parent: { sessionId: SESSION_ID, runId: "run-7", toolCallId: "toolu_1", depth: 1, closePolicy: "terminate" },
        },
        { type: "prompt", id: ids.prompt, sessionId: childId, text: "count to three" },
      ],
    });
  });

  it("is deterministic: deciding the call again (a new owner) yields the same child and command ids", () => {
    expect(decideChildCall(base)).toEqual(decideChildCall({ ...base }));
    expect(childSessionId(SESSION_ID, "toolu_1")).toMatch(/^sub-[0-9a-f]{32}$/);
    expect(childSessionId(SESSION_ID, "toolu_1")).not.toBe(childSessionId(SESSION_ID, "toolu_2"));
    expect(childSessionId(SESSION_ID, "toolu_1")).not.toBe(childSessionId("other", "toolu_1"));
  });

  it("a child of a child is one level deeper; past the depth limit it is an error result", () => {
    const deeper = decideChildCall({ ...base, parentLink: { ...LINK, depth: 2 } });
    expect(deeper.kind === "start" && deeper.link.depth).toBe(3);
    expect(decideChildCall({ ...base, parentLink: { ...LINK, depth: 3 } })).toEqual({
      kind: "refuse",
      text: CHILD_TEXT.tooDeep(3),
    });
  });

  it("past the fan-out limit of one message it is an error result; the earlier calls start", () => {
    const limits = { ...LIMITS, maxFanOut: 2 };
    expect(decideChildCall({ ...base, ordinal: 1, limits }).kind).toBe("start");
    expect(decideChildCall({ ...base, ordinal: 2, limits })).toEqual({ kind: "refuse", text: CHILD_TEXT.tooMany(2) });
  });

  it("arguments that do not parse are an error result naming the field", () => {
    expect(decideChildCall({ ...base, args: { agent: "worker" } })).toMatchObject({ kind: "refuse", text: /prompt/ });
    expect(decideChildCall({ ...base, args: { prompt: "x", agent: "a.b" } })).toMatchObject({
      kind: "refuse",
      text: /agent/,
    });
  });

  it("the ordinal counts the agent calls of the last assistant message only", () => {
    const message = assistantMessage([
      toolCall("a1", AGENT_TOOL_NAME, { prompt: "one" }),
      toolCall("b1", "bash", { command: "ls" }),
      toolCall("a2", AGENT_TOOL_NAME, { prompt: "two" }),
    ]);
    const log: EventInput[] = [
      { type: "session_created", config: CONFIG },
      { type: "command_accepted", commandId: "c-run", commandType: "prompt" },
      { type: "agent_start" },
      { type: "turn_start" },
      { type: "message_start", message: userMessage("go") },
      { type: "message_end", message: userMessage("go") },
      { type: "message_start", message: startOf(message) },
      { type: "message_end", message },
    ];
    const { entries } = given(...log).state.tree;
    expect(agentCallOrdinal(entries, "a1")).toBe(0);
    expect(agentCallOrdinal(entries, "a2")).toBe(1);
    expect(agentCallOrdinal(entries, "missing")).toBe(0);
  });
});

describe("sub-agents / a child refuses its task", () => {
  it("the rejection of the parent's prompt (and only that one) is the refusal the parent gets", () => {
    const childId = childSessionId(SESSION_ID, "toolu_1");
    const ids = childCommandIds(childId);
    const over = given({
      type: "session_created",
      config: { ...CONFIG, budget: { session: { costUsd: 0 } } },
      parent: LINK,
    }).when(command("prompt", { text: "go", id: ids.prompt }));
    const refusal = childPromptRefusal(
      childId,
      over.events.map((e) => ({ id: e.meta.id, body: e })),
    );
    expect(over.events[0]).toMatchObject({ type: "command_rejected", code: "budget_exceeded" });
    expect(refusal).toMatch(/^budget_exceeded: /);
    const other = given({
      type: "session_created",
      config: { ...CONFIG, budget: { session: { costUsd: 0 } } },
      parent: LINK,
    }).when(command("prompt", { text: "go", id: "someone-else" }));
    expect(
      childPromptRefusal(
        childId,
        other.events.map((e) => ({ id: e.meta.id, body: e })),
      ),
    ).toBeUndefined();
  });
});

describe("sub-agents / the parent's abort", () => {
  const childId = childSessionId(SESSION_ID, "toolu_1");
  const ids = childCommandIds(childId);

  it("terminate aborts the child, request_cancel steers it to wrap up, abandon sends nothing", () => {
    expect(decideChildClose(childId, "terminate")).toEqual({ type: "abort", id: ids.abort, sessionId: childId });
    expect(decideChildClose(childId, "request_cancel")).toMatchObject({
      type: "steer",
      id: ids.cancel,
      sessionId: childId,
    });
    expect(decideChildClose(childId, "abandon")).toBeUndefined();
  });

  it("a resumed run that holds an accepted abort closes the children of its started, unended agent calls", () => {
    const message = assistantMessage([
      toolCall("a1", AGENT_TOOL_NAME, { prompt: "one" }),
      toolCall("a2", AGENT_TOOL_NAME, { prompt: "two" }),
      toolCall("b1", "bash", { command: "ls" }),
      toolCall("a3", AGENT_TOOL_NAME, { prompt: "three" }),
    ]);
    const running: EventInput[] = [
      { type: "session_created", config: CONFIG },
      { type: "command_accepted", commandId: "c-run", commandType: "prompt" },
      { type: "agent_start" },
      { type: "turn_start" },
      { type: "message_start", message: startOf(message) },
      { type: "message_end", message },
      { type: "tool_execution_start", toolCallId: "a1", toolName: AGENT_TOOL_NAME, args: { prompt: "one" } },
      { type: "tool_execution_start", toolCallId: "a2", toolName: AGENT_TOOL_NAME, args: { prompt: "two" } },
      { type: "tool_execution_start", toolCallId: "b1", toolName: "bash", args: { command: "ls" } },
      {
        type: "tool_execution_end",
        toolCallId: "a2",
        toolName: AGENT_TOOL_NAME,
        result: { content: [textOf("two done")] },
        isError: false,
      },
    ];
    expect(childrenToClose(runCursorOf(given(...running).state))).toEqual([]);
    const aborted = given(...running, { type: "command_accepted", commandId: "c-abort", commandType: "abort" });
    // a2 ended, b1 is no agent call, a3 never started: only a1's child is closed.
    expect(childrenToClose(runCursorOf(aborted.state))).toEqual(["a1"]);
  });
});

describe("sub-agents / spend", () => {
  it("an agent call's end adds its child's spend to the parent's run and session, not its day records", () => {
    const message = assistantMessage([toolCall("a1", AGENT_TOOL_NAME, { prompt: "one" })]);
    const childSpend = { inputTokens: 100, outputTokens: 50, totalTokens: 150, costUsd: 0.25 };
    const state = given(
      { type: "session_created", config: CONFIG },
      { type: "command_accepted", commandId: "c-run", commandType: "prompt" },
      { type: "agent_start" },
      { type: "turn_start" },
      { type: "message_start", message: startOf(message) },
      { type: "message_end", message },
      { type: "tool_execution_start", toolCallId: "a1", toolName: AGENT_TOOL_NAME, args: { prompt: "one" } },
      {
        type: "tool_execution_end",
        toolCallId: "a1",
        toolName: AGENT_TOOL_NAME,
        result: { content: [textOf("done")], details: { childSessionId: "sub-1", spend: childSpend } },
        isError: false,
      },
    ).state;
    const own = state.spend.days.values().next().value ?? emptySpend();
    expect(state.spend.session.totalTokens - own.totalTokens).toBe(150);
    expect(state.spend.run.costUsd - own.costUsd).toBeCloseTo(0.25);
  });

  it("another tool's details are never read as spend", () => {
    const state = given(
      { type: "session_created", config: CONFIG },
      {
        type: "tool_execution_end",
        toolCallId: "b1",
        toolName: "bash",
        result: {
          content: [textOf("x")],
          details: { childSessionId: "sub-1", spend: { ...emptySpend(), costUsd: 9 } },
        },
        isError: false,
      },
    ).state;
    expect(state.spend.session.costUsd).toBe(0);
  });
});
