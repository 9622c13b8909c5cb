// Specs of approvals as policy: given a log, when a call reaches the gate, a timer fires or a
// decision arrives, then these events and effects (PROTOCOL "Approvals").
import { type ApprovalLayer, ApprovalRule, workerApprovalLayer } from "@fleet/protocol";
import { assistantMessage, CONFIG, type EventInput, startOf, T0, toolCall, userMessage } from "@fleet/protocol/testing";
import { describe, expect, it } from "vitest";
import { command, given, ONE_RUN } from "../testing/decider-spec.js";
import { APPROVAL_TEXT, decideApprovalExpiry, decideApprovalGate } from "./approval-gate.js";
import { DECIDER_TEXT } from "./decide-command.js";

const rm = { command: "rm -rf /tmp/x" };
const toolUse = assistantMessage([toolCall("t1", "bash", rm), toolCall("t2", "bash", { command: "ls" })]);
const toolsStarted: EventInput[] = [
  { type: "session_created", config: CONFIG },
  ...ONE_RUN,
  { type: "command_accepted", commandId: "c-run", commandType: "prompt" },
  { type: "agent_start" },
  { type: "turn_start" },
  { type: "message_start", message: userMessage("go") },
  { type: "message_end", message: userMessage("go") },
  { type: "message_start", message: startOf(toolUse) },
  { type: "message_end", message: toolUse },
  { type: "tool_execution_start", toolCallId: "t1", toolName: "bash", args: rm },
];
const EXPIRES_AT = T0 + 60_000;
const REQUEST = {
  type: "tool_approval_requested",
  toolCallId: "t1",
  toolName: "bash",
  args: rm,
  rule: { scope: "session", index: 0 },
  expiresAt: EXPIRES_AT,
} as const;
const requested: EventInput[] = [...toolsStarted, REQUEST];

const rules = (...list: unknown[]) => list.map((r) => ApprovalRule.parse(r));
const session = (...list: unknown[]): ApprovalLayer => ({ scope: "session", rules: rules(...list) });
const tenant = (...list: unknown[]): ApprovalLayer => ({ scope: "tenant", rules: rules(...list) });
const ids = () => {
  let n = 0;
  return () => `g${++n}`;
};
const gate = (log: EventInput[], layers: ApprovalLayer[], args: unknown = rm, toolCallId = "t1") =>
  decideApprovalGate(given(...log).state, { toolCallId, toolName: "bash", args }, layers, T0, ids());

describe("approvals / the gate", () => {
  it("no rule: the call runs (the worker default of other tools does not apply)", () => {
    expect(gate(toolsStarted, [session(), tenant(), workerApprovalLayer(["write"])])).toEqual({ kind: "run" });
  });

  it("an argument pattern that matches asks, with the rule and the expiry on the request", () => {
    const layers = [
      session({ tool: "bash", args: { pointer: "/command", regex: "^rm\\s" }, action: "ask", expiresInMs: 60_000 }),
    ];
    expect(gate(toolsStarted, layers)).toEqual({
      kind: "request",
      expiresAt: EXPIRES_AT,
      request: { id: "g1", body: REQUEST },
    });
    expect(gate(toolsStarted, layers, { command: "ls" }, "t2")).toEqual({ kind: "run" });
  });

  it("deny refuses with the policy's text; session rules come before the tenant's and the worker's", () => {
    const layers = [
      session({ tool: "bash", args: { pointer: "/command", regex: "^ls" }, action: "allow" }),
      tenant({ tool: "*", action: "deny", reason: "read-only tenant" }),
      workerApprovalLayer(["bash"]),
    ];
    expect(gate(toolsStarted, layers, { command: "ls" }, "t2")).toEqual({ kind: "run" });
    expect(gate(toolsStarted, layers)).toEqual({
      kind: "refuse",
      reason: APPROVAL_TEXT.policy("tenant", 0, "read-only tenant"),
    });
  });

  it("an agent version's rules come after the session's and before the tenant's", () => {
    const version = (...list: unknown[]): ApprovalLayer => ({ scope: "agent_version", rules: rules(...list) });
    const layers = [
      session({ tool: "bash", args: { pointer: "/command", regex: "^ls" }, action: "allow" }),
      version({ tool: "bash", action: "deny", reason: "no shell for this agent" }),
      tenant({ tool: "bash", action: "allow" }),
    ];
    expect(gate(toolsStarted, layers, { command: "ls" }, "t2")).toEqual({ kind: "run" });
    expect(gate(toolsStarted, layers)).toEqual({
      kind: "refuse",
      reason: APPROVAL_TEXT.policy("agent_version", 0, "no shell for this agent"),
    });
  });

  it("the worker default (FLEET_APPROVAL_TOOLS) asks without expiry when nothing else matches", () => {
    const step = gate(toolsStarted, [session(), tenant(), workerApprovalLayer(["bash"])]);
    expect(step).toMatchObject({ kind: "request", expiresAt: undefined });
    expect(step.kind === "request" && step.request.body).toEqual({
      type: "tool_approval_requested",
      toolCallId: "t1",
      toolName: "bash",
      args: rm,
      rule: { scope: "worker", index: 0 },
    });
  });

  it("a logged request is waited on again whatever the rules say now (a resumed run)", () => {
    expect(gate(requested, [session({ tool: "*", action: "allow" })])).toEqual({
      kind: "wait",
      expiresAt: EXPIRES_AT,
    });
  });

  it("a logged decision is used as it is: edited arguments, denial, expiry", () => {
    const edited = { command: "rm -rf /tmp/x/cache" };
    expect(
      gate(
        [...requested, { type: "tool_approval_resolved", toolCallId: "t1", approved: true, editedArgs: edited }],
        [],
      ),
    ).toEqual({ kind: "run", args: edited });
    expect(
      gate([...requested, { type: "tool_approval_resolved", toolCallId: "t1", approved: false, reason: "no" }], []),
    ).toEqual({ kind: "refuse", reason: "no" });
    expect(
      gate(
        [...requested, { type: "tool_approval_resolved", toolCallId: "t1", approved: false, outcome: "expired" }],
        [],
      ),
    ).toEqual({ kind: "refuse", reason: APPROVAL_TEXT.expired });
  });
});

describe("approvals / the expiry timer", () => {
  it("fires at expiresAt: the request expires, distinct from a denial, and the gate goes on", () => {
    const state = given(...requested).state;
    const decision = decideApprovalExpiry(state, "t1", EXPIRES_AT, ids());
    expect(decision).toEqual({
      kind: "decided",
      events: [
        { id: "g1", body: { type: "tool_approval_resolved", toolCallId: "t1", approved: false, outcome: "expired" } },
      ],
      effects: [{ type: "approval_decided", toolCallId: "t1" }],
    });
  });

  it("early, after a decision, or for a request without expiry: nothing", () => {
    const nothing = { kind: "decided", events: [], effects: [] };
    expect(decideApprovalExpiry(given(...requested).state, "t1", EXPIRES_AT - 1, ids())).toEqual(nothing);
    const decided = given(...requested, { type: "tool_approval_resolved", toolCallId: "t1", approved: true }).state;
    expect(decideApprovalExpiry(decided, "t1", EXPIRES_AT + 1, ids())).toEqual(nothing);
    const noExpiry = given(...toolsStarted, {
      type: "tool_approval_requested",
      toolCallId: "t1",
      toolName: "bash",
      args: rm,
    }).state;
    expect(decideApprovalExpiry(noExpiry, "t1", EXPIRES_AT + 1, ids())).toEqual(nothing);
  });
});

describe("approvals / commands", () => {
  it("an approval with edited arguments is recorded as such", () => {
    const edited = { command: "rm -rf /tmp/x/cache" };
    const outcome = given(...requested)
      .when(command("approve_tool_call", { toolCallId: "t1", args: edited }), {
        validateToolArgs: () => ({ ok: true }),
      })
      .then({
        events: [
          { type: "command_accepted", commandId: "cmd-1", commandType: "approve_tool_call" },
          { type: "tool_approval_resolved", toolCallId: "t1", approved: true, editedArgs: edited },
        ],
        effects: [{ type: "approval_decided", toolCallId: "t1" }],
      });
    expect(outcome.state.approvals.get("t1")?.decision).toEqual({
      approved: true,
      outcome: "approved",
      editedArgs: edited,
    });
  });

  it("edited arguments that do not fit the tool's schema are invalid", () => {
    given(...requested)
      .when(command("approve_tool_call", { toolCallId: "t1", args: { command: 5 } }), {
        validateToolArgs: () => ({ ok: false, error: "command: must be string" }),
      })
      .thenRejected("invalid", DECIDER_TEXT.badEditedArgs("bash", "command: must be string"));
  });

  it("a decision at or after expiresAt is refused conflict (the timer logs the expiry)", () => {
    given(...requested)
      .when(command("approve_tool_call", { toolCallId: "t1" }), { now: EXPIRES_AT })
      .thenRejected("conflict", DECIDER_TEXT.approvalExpired("t1"));
    given(...requested)
      .when(command("deny_tool_call", { toolCallId: "t1" }), { now: EXPIRES_AT - 1 })
      .then({
        events: [
          { type: "command_accepted", commandId: "cmd-1", commandType: "deny_tool_call" },
          { type: "tool_approval_resolved", toolCallId: "t1", approved: false },
        ],
        effects: [{ type: "approval_decided", toolCallId: "t1" }],
      });
  });

  it("an expired request is not waiting any more", () => {
    given(...requested, { type: "tool_approval_resolved", toolCallId: "t1", approved: false, outcome: "expired" })
      .when(command("approve_tool_call", { toolCallId: "t1" }))
      .thenRejected("not_found", DECIDER_TEXT.notWaiting("t1"));
  });

  it("set_approval_rules replaces the session's rules, even mid-run; a redelivery appends nothing twice", () => {
    const list = [{ tool: "bash", args: { pointer: "/command", regex: "^rm " }, action: "deny" as const }];
    const outcome = given(...requested)
      .when(command("set_approval_rules", { rules: list }))
      .then({
        events: [
          { type: "command_accepted", commandId: "cmd-1", commandType: "set_approval_rules" },
          { type: "approval_rules_set", rules: list },
        ],
      });
    expect(outcome.state.approvalRules).toEqual(list);
    given(...requested, { type: "command_accepted", commandId: "cmd-1", commandType: "set_approval_rules" })
      .whenRedelivered(command("set_approval_rules", { rules: list }))
      .then({ events: [{ type: "approval_rules_set", rules: list }] });
  });
});
