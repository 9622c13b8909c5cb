// Specs of agents in the decider: a session created from an agent's version, and `set_agent`.
import { type AgentVersion, agentSessionConfig, applyConfigPatch } from "@fleet/protocol";
import {
  assistantMessage,
  CONFIG,
  type EventInput,
  SESSION_ID,
  startOf,
  toolCall,
  userMessage,
} from "@fleet/protocol/testing";
import { describe, expect, it } from "vitest";
import { command, given, givenLog, ONE_RUN, SPEC_DEFAULTS } from "../testing/decider-spec.js";
import { commandInput } from "./command-input.js";
import { AGENT_TEXT } from "./decide-agent.js";

const V2: AgentVersion = {
  name: "support",
  version: 2,
  settings: {
    model: { provider: "anthropic", modelId: "claude-support" },
    thinkingLevel: "low",
    systemPrompt: "You answer support tickets.",
    activeTools: ["read"],
    compaction: { enabled: false, reserveTokens: 1000, keepRecentTokens: 2000 },
    budget: { run: { costUsd: 1 } },
    approvalRules: [{ tool: "bash", action: "ask" }],
  },
  createdAt: 1,
};

const created: EventInput[] = [{ type: "session_created", config: CONFIG }];
const toolUse = assistantMessage([toolCall("t1", "bash", { command: "ls" })]);
const runOpen: EventInput[] = [
  { type: "command_accepted", commandId: "c-run", commandType: "prompt" },
  { type: "agent_start" },
  { type: "turn_start" },
  { type: "message_start", message: userMessage("go") },
  { type: "message_end", message: userMessage("go") },
  { type: "message_start", message: startOf(toolUse) },
  { type: "message_end", message: toolUse },
  { type: "tool_execution_start", toolCallId: "t1", toolName: "bash", args: { command: "ls" } },
];

describe("agents / create_session from an agent", () => {
  it("asks the shell for the latest version of `name`, then for `name@version` that version", () => {
    expect(given().when(command("create_session", { agent: "support" })).decision).toEqual({
      kind: "needs_agent_version",
      name: "support",
      version: undefined,
    });
    expect(given().when(command("create_session", { agent: "support@2" })).decision).toEqual({
      kind: "needs_agent_version",
      name: "support",
      version: 2,
    });
  });

  it("records the resolved version in session_created; its settings are the config, its rules follow (scope agent_version)", () => {
    const outcome = given()
      .when(command("create_session", { agent: "support" }), { agentVersion: V2 })
      .then({
        events: [
          { type: "command_accepted", commandId: "cmd-1", commandType: "create_session" },
          {
            type: "session_created",
            config: agentSessionConfig(SPEC_DEFAULTS, V2.settings),
            agent: { name: "support", version: 2 },
          },
          {
            type: "agent_change",
            agent: { name: "support", version: 2 },
            approvalRules: [{ tool: "bash", action: "ask" }],
          },
        ],
      });
    expect(outcome.state.tree.agent).toEqual({ name: "support", version: 2 });
    expect(outcome.state.tree.config?.systemPrompt).toBe("You answer support tickets.");
    expect(outcome.state.spend.budget).toEqual({ run: { costUsd: 1 } });
    expect(outcome.state.agentApprovalRules).toEqual([{ tool: "bash", action: "ask" }]);
    // The session's own rules are apart: none set.
    expect(outcome.state.approvalRules).toEqual([]);
  });

  it("fields of `config` replace the version's", () => {
    const outcome = given().when(command("create_session", { agent: "support@2", config: { systemPrompt: "Mine." } }), {
      agentVersion: V2,
    });
    const config = applyConfigPatch(agentSessionConfig(SPEC_DEFAULTS, V2.settings), { systemPrompt: "Mine." });
    expect(outcome.events[1]).toMatchObject({ type: "session_created", config });
  });

  it("a missing agent or version is command_rejected not_found", () => {
    given()
      .when(command("create_session", { agent: "support@7" }), { agentVersion: null })
      .thenRejected("not_found", AGENT_TEXT.notFound("support@7"));
    // The shell found another version than asked: not that one.
    given()
      .when(command("create_session", { agent: "support@7" }), { agentVersion: V2 })
      .thenRejected("not_found", AGENT_TEXT.notFound("support@7"));
  });

  it("a malformed reference is invalid before any lookup; an agent with forkFrom is invalid", () => {
    for (const agent of ["a.b", "support@0", "support@latest", ""]) {
      const bytes = new TextEncoder().encode(
        JSON.stringify({ type: "create_session", id: "cmd-1", sessionId: SESSION_ID, agent }),
      );
      const input = commandInput({ data: bytes, commandRef: "cmd-1", hasMsgId: true });
      expect(input.ok).toBe(false);
      given().when(input).thenRejected("invalid", /agent/);
    }
    given()
      .when(command("create_session", { agent: "support", forkFrom: { sessionId: "other", entryId: "e1" } }))
      .thenRejected("invalid", AGENT_TEXT.withFork);
  });

  it("redelivered after session_created: the missing approval rules of the pinned version, nothing else", () => {
    const first = given().when(command("create_session", { agent: "support" }), { agentVersion: V2 });
    // A crash after session_created: the log holds the outcome and session_created only.
    const cut = givenLog(first.events.slice(0, 2));
    expect(cut.whenRedelivered(command("create_session", { agent: "support" })).decision).toEqual({
      kind: "needs_agent_version",
      name: "support",
      version: 2,
    });
    cut.whenRedelivered(command("create_session", { agent: "support" }), { agentVersion: V2 }).then({
      events: [
        {
          type: "agent_change",
          agent: { name: "support", version: 2 },
          approvalRules: [{ tool: "bash", action: "ask" }],
        },
      ],
    });
  });
});

describe("agents / set_agent", () => {
  it("an unknown session is not_found; a missing version is not_found", () => {
    given()
      .when(command("set_agent", { agent: "support" }))
      .thenRejected("not_found");
    given(...created, ...ONE_RUN)
      .when(command("set_agent", { agent: "support@9" }), { agentVersion: null })
      .thenRejected("not_found", AGENT_TEXT.notFound("support@9"));
  });

  it("idle: the version's entries and agent_change at once; the fold runs the version", () => {
    const outcome = given(...created, ...ONE_RUN).when(command("set_agent", { agent: "support" }), {
      agentVersion: V2,
    });
    expect(outcome.events.map((e) => e.type)).toEqual([
      "command_accepted",
      "model_change",
      "thinking_level_change",
      "active_tools_change",
      "agent_change",
    ]);
    expect(outcome.events[4]).toMatchObject({
      type: "agent_change",
      agent: { name: "support", version: 2 },
      systemPrompt: "You answer support tickets.",
      compaction: V2.settings.compaction,
      budget: V2.settings.budget,
      approvalRules: V2.settings.approvalRules,
    });
    const state = outcome.state;
    expect(state.tree.agent).toEqual({ name: "support", version: 2 });
    expect(state.status.systemPrompt).toBe("You answer support tickets.");
    expect(state.status.model).toEqual({ provider: "anthropic", modelId: "claude-support" });
    expect(state.tree.config?.compaction).toEqual(V2.settings.compaction);
    expect(state.spend.budget).toEqual(V2.settings.budget);
    expect(state.agentApprovalRules).toEqual(V2.settings.approvalRules);
  });

  it("mid-run: pending writes only, flushed at the next turn boundary; the session runs the old version until then", () => {
    const outcome = given(...created, ...ONE_RUN, ...runOpen).when(command("set_agent", { agent: "support@2" }), {
      agentVersion: V2,
    });
    expect(outcome.events.map((e) => e.type)).toEqual([
      "command_accepted",
      "pending_write",
      "pending_write",
      "pending_write",
      "pending_write",
    ]);
    expect(outcome.state.pendingWrites.map((w) => w.write.type)).toEqual([
      "model_change",
      "thinking_level_change",
      "active_tools_change",
      "agent_change",
    ]);
    expect(outcome.state.tree.agent).toBeUndefined();
    expect(outcome.state.status.systemPrompt).toBe(CONFIG.systemPrompt);
  });

  it("redelivered with its acceptance cut after the outcome: the writes are appended once", () => {
    const cut = given(...created, ...ONE_RUN, {
      type: "command_accepted",
      commandId: "cmd-1",
      commandType: "set_agent",
    });
    const again = cut.whenRedelivered(command("set_agent", { agent: "support@2" }), { agentVersion: V2 });
    expect(again.events.map((e) => e.type)).toEqual([
      "model_change",
      "thinking_level_change",
      "active_tools_change",
      "agent_change",
    ]);
    expect(again.state.tree.agent).toEqual({ name: "support", version: 2 });
  });
});
