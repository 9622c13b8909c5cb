// Specs of the session decider's budget rules: a run that would start over a budget is refused with
// `budget_exceeded`; `set_budget` (and `configure {budget}`) change the budget at once.
import { emptyUsage, type FleetEvent } from "@fleet/protocol";
import { assistantMessage, CONFIG, type EventInput, startOf, textOf, userMessage } from "@fleet/protocol/testing";
import { describe, expect, it } from "vitest";
import { command, given, givenLog, HELLO } from "../testing/decider-spec.js";

/** One finished run whose assistant message used 12 input and 40 output tokens, $0.30. */
const SPENT = (() => {
  const m = assistantMessage([textOf("hi")]);
  m.usage = { ...emptyUsage(), input: 12, output: 40, totalTokens: 52 };
  m.usage.cost.total = 0.3;
  return m;
})();
const spentRun: EventInput[] = [
  { type: "command_accepted", commandId: "c0", commandType: "prompt" },
  { type: "agent_start" },
  { type: "turn_start" },
  { type: "message_start", message: HELLO },
  { type: "message_end", message: HELLO },
  { type: "message_start", message: startOf(SPENT) },
  { type: "message_end", message: SPENT },
  { type: "turn_end", message: SPENT, toolResults: [] },
  { type: "agent_end", messages: [HELLO, SPENT] },
];
const createdWith = (budget: NonNullable<typeof CONFIG.budget>): EventInput => ({
  type: "session_created",
  config: { ...CONFIG, budget },
});
const prompt = (text = "go on") => command("prompt", { text });
const noTenant = { tenantBudget: undefined };

describe("loop decider / budgets at the start of a run", () => {
  it("refuses a prompt once the session's output tokens reached its limit", () => {
    given(createdWith({ session: { outputTokens: 40 } }), ...spentRun)
      .when(prompt(), noTenant)
      .thenRejected("budget_exceeded", "Budget exceeded: session output tokens 40/40");
  });

  it("refuses a prompt once the session's cost reached its limit", () => {
    given(createdWith({ session: { costUsd: 0.3 } }), ...spentRun)
      .when(prompt())
      .thenRejected("budget_exceeded", "Budget exceeded: session cost $0.3000/$0.3000");
  });

  it("refuses a prompt whose first call would send more input tokens than a run may (chars/4 estimate)", () => {
    // 40 chars of prompt (10 tokens) + the 28-char system prompt (7 tokens)
    given(createdWith({ run: { inputTokens: 17 } }))
      .when(prompt("x".repeat(40)))
      .thenRejected("budget_exceeded", "Budget exceeded: run input tokens 17/17");
    given(createdWith({ run: { inputTokens: 18 } }))
      .when(prompt("x".repeat(40)))
      .then({
        events: [
          {
            type: "command_accepted",
            commandId: "cmd-1",
            commandType: "prompt",
            messages: [userMessage("x".repeat(40))],
          },
        ],
        effects: [{ type: "start_run", kind: "prompt", messages: [{ ...userMessage("x".repeat(40)) }] }],
      });
  });

  it("counts the last usage of the context toward the session's total tokens", () => {
    // context: SPENT's usage (52) + "go on" (2) + system prompt (7); spent so far 52
    given(createdWith({ session: { totalTokens: 113 } }), ...spentRun)
      .when(prompt())
      .thenRejected("budget_exceeded", "Budget exceeded: session total tokens 113/113");
    expect(given(createdWith({ session: { totalTokens: 114 } }), ...spentRun).when(prompt()).events[0]?.type).toBe(
      "command_accepted",
    );
  });

  it("refuses a prompt when the tenant's spend of the day reached its daily limit, even for a new session", () => {
    const tenantBudget = {
      limits: { costUsd: 5 },
      spent: { inputTokens: 100, outputTokens: 100, totalTokens: 200, costUsd: 5 },
    };
    given(createdWith({}), ...spentRun)
      .when(prompt(), { tenantBudget })
      .thenRejected("budget_exceeded", "Budget exceeded: tenant cost $5.0000/$5.0000");
    given()
      .when(prompt(), { tenantBudget })
      .thenRejected("budget_exceeded", /^Budget exceeded: tenant cost/);
    const under = { ...tenantBudget, spent: { ...tenantBudget.spent, costUsd: 4.99 } };
    expect(given(createdWith({}), ...spentRun).when(prompt(), { tenantBudget: under }).events[0]?.type).toBe(
      "command_accepted",
    );
  });

  it("refuses append_message {triggerTurn} over budget, but still accepts it without a turn", () => {
    const message = userMessage("more");
    given(createdWith({ session: { outputTokens: 40 } }), ...spentRun)
      .when(command("append_message", { message, triggerTurn: true }))
      .thenRejected("budget_exceeded", "Budget exceeded: session output tokens 40/40");
    expect(
      given(createdWith({ session: { outputTokens: 40 } }), ...spentRun)
        .when(command("append_message", { message }))
        .events.map((e) => e.type),
    ).toEqual(["command_accepted", "message_start", "message_end"]);
  });

  it("a rejection changes no spend, and steering is still queued for a later run", () => {
    const outcome = given(createdWith({ session: { outputTokens: 40 } }), ...spentRun).when(
      command("steer", { text: "later" }),
    );
    expect(outcome.events.map((e) => e.type)).toEqual(["command_accepted", "queue_update"]);
    expect(outcome.state.spend.session.outputTokens).toBe(40);
  });
});

describe("loop decider / set_budget", () => {
  const budget = { run: { outputTokens: 1000 }, session: { costUsd: 2 } };

  it("appends budget_change at once, and the fold takes the new budget", () => {
    const outcome = given(createdWith({ session: { outputTokens: 40 } }), ...spentRun)
      .when(command("set_budget", { budget }))
      .then({
        events: [
          { type: "command_accepted", commandId: "cmd-1", commandType: "set_budget" },
          { type: "budget_change", budget },
        ],
      });
    expect(outcome.state.spend.budget).toEqual(budget);
  });

  it("is not deferred during a run: the running run is held to the new budget at its next check", () => {
    const running: EventInput[] = [
      { type: "command_accepted", commandId: "c-run", commandType: "prompt" },
      { type: "agent_start" },
      { type: "turn_start" },
      { type: "message_start", message: userMessage("go") },
      { type: "message_end", message: userMessage("go") },
    ];
    const outcome = given(createdWith({}), ...running).when(command("set_budget", { budget }));
    expect(outcome.events.map((e: FleetEvent) => e.type)).toEqual(["command_accepted", "budget_change"]);
    expect(outcome.events[1]?.meta.commandId).toBe("cmd-1");
  });

  it("raising the budget lets the refused prompt start", () => {
    const g = given(createdWith({ session: { outputTokens: 40 } }), ...spentRun, {
      type: "budget_change",
      budget: { session: { outputTokens: 41 } },
    });
    expect(g.when(prompt()).events[0]?.type).toBe("command_accepted");
  });

  it("configure {budget} appends the same budget_change", () => {
    given(createdWith({}))
      .when(command("configure", { budget }))
      .then({
        events: [
          { type: "command_accepted", commandId: "cmd-1", commandType: "configure" },
          { type: "budget_change", budget },
        ],
      });
  });

  it("a redelivered set_budget appends its budget_change when a crash cut it, and nothing once it is logged", () => {
    const cut = given(createdWith({}), { type: "command_accepted", commandId: "cmd-1", commandType: "set_budget" });
    const completed = cut.whenRedelivered(command("set_budget", { budget }));
    expect(completed.events.map((e) => [e.type, e.meta.commandId])).toEqual([["budget_change", "cmd-1"]]);
    givenLog([...cut.log, ...completed.events])
      .whenRedelivered(command("set_budget", { budget }))
      .then({ events: [] });
  });
});

describe("loop decider / budgets before a summary's LLM call", () => {
  const long = (n: number) => userMessage(`${"x".repeat(40_000)} ${n}`);
  const bigSession = (budget: NonNullable<typeof CONFIG.budget>): EventInput[] => [
    createdWith(budget),
    ...[1, 2, 3].flatMap((n): EventInput[] => [
      { type: "message_end", message: long(n) },
      { type: "message_end", message: assistantMessage([textOf(`ok ${n}`)]) },
    ]),
  ];

  it("refuses a manual compaction that would start over the session's input tokens (chars/4 of what it summarises)", () => {
    // The last 20,000 tokens are kept, so the first exchange is summarised: about 10,000 tokens.
    given(...bigSession({ session: { inputTokens: 10_000 } }))
      .when(command("compact"), noTenant)
      .thenRejected("budget_exceeded", /^Budget exceeded: session input tokens 100\d\d\/10000$/);
    const ok = given(...bigSession({ session: { inputTokens: 11_000 } })).when(command("compact"), noTenant);
    expect(ok.events.map((e) => e.type)).toEqual(["command_accepted", "compaction_start"]);
    // A run's budget does not apply to a summary outside a run.
    const runOnly = given(...bigSession({ run: { inputTokens: 1 } })).when(command("compact"), noTenant);
    expect(runOnly.events.map((e) => e.type)).toEqual(["command_accepted", "compaction_start"]);
  });

  it("refuses navigate with a summary once the tenant's day is spent; without a summary it moves", () => {
    const tenantBudget = {
      limits: { costUsd: 5 },
      spent: { inputTokens: 100, outputTokens: 100, totalTokens: 200, costUsd: 5 },
    };
    const log = given(createdWith({}), ...spentRun);
    const target = log.state.tree.entries[0]?.id as string;
    log
      .when(command("navigate", { targetId: target, summarize: true }), { tenantBudget })
      .thenRejected("budget_exceeded", "Budget exceeded: tenant cost $5.0000/$5.0000");
    expect(log.when(command("navigate", { targetId: target }), { tenantBudget }).events.map((e) => e.type)).toEqual([
      "command_accepted",
      "leaf",
    ]);
    expect(log.when(command("navigate", { targetId: target, summarize: true }), noTenant).decision.kind).toBe(
      "needs_branch_summary",
    );
  });
});
