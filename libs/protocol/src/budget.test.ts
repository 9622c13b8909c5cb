import { describe, expect, it } from "vitest";
import { assistantMessage, CONFIG, createLogBuilder, textOf, userMessage } from "../fixtures/builders.js";
import { budgetExceededMessage, budgetViolation, spendOfUsage, utcDayOf } from "./budget.js";
import { emptyUsage } from "./messages.js";
import { spendOfMessage } from "./reducers/session-spend.js";
import { foldSessionEvents } from "./reducers/session-state.js";

const used = (input: number, output: number, cost: number) => {
  const m = assistantMessage([textOf("x")]);
  m.usage = { ...emptyUsage(), input, output, cacheRead: 2, totalTokens: input + output + 2 };
  m.usage.cost.total = cost;
  return m;
};

describe("budget / limits and spend", () => {
  it("names the UTC day of a timestamp without Date", () => {
    expect(utcDayOf(0)).toBe("1970-01-01");
    expect(utcDayOf(1_764_450_000_000)).toBe("2025-11-29");
    expect(utcDayOf(Date.UTC(2024, 1, 29, 23, 59, 59, 999))).toBe("2024-02-29");
    expect(utcDayOf(Date.UTC(2026, 11, 31, 12))).toBe("2026-12-31");
    for (let ts = Date.UTC(1999, 0, 1); ts < Date.UTC(2031, 0, 1); ts += 86_400_000 * 7 + 3_600_000) {
      expect(utcDayOf(ts)).toBe(new Date(ts).toISOString().slice(0, 10));
    }
  });

  it("counts cache tokens as input and reports the first limit reached, in a clear sentence", () => {
    const spent = spendOfUsage(used(10, 1200, 0.0123).usage);
    expect(spent).toEqual({ inputTokens: 12, outputTokens: 1200, totalTokens: 1212, costUsd: 0.0123 });
    expect(budgetViolation("session", { outputTokens: 1201, costUsd: 1 }, spent)).toBeUndefined();
    const v = budgetViolation("session", { outputTokens: 1000, costUsd: 0.01 }, spent);
    expect(v).toEqual({ scope: "session", limit: "outputTokens", spent: 1200, max: 1000 });
    expect(budgetExceededMessage(v as NonNullable<typeof v>)).toBe("Budget exceeded: session output tokens 1200/1000");
    const cost = budgetViolation("tenant", { costUsd: 0.01 }, spent);
    expect(budgetExceededMessage(cost as NonNullable<typeof cost>)).toBe(
      "Budget exceeded: tenant cost $0.0123/$0.0100",
    );
  });

  it("folds per-run, per-session and per-day spend from assistant message_end, and the budget from the log", () => {
    const log = createLogBuilder(3);
    log.add({ type: "session_created", config: { ...CONFIG, budget: { run: { outputTokens: 50 } } } });
    for (const [i, m] of [used(10, 20, 0.5), used(30, 40, 0.25)].entries()) {
      log.add({ type: "agent_start" });
      log.add({ type: "message_end", message: userMessage(`q${i}`) });
      log.add({ type: "message_end", message: m });
      log.add({ type: "agent_end", messages: [m] });
    }
    log.add({ type: "budget_change", budget: { session: { costUsd: 1 } } });
    const state = foldSessionEvents(log.events);
    expect(state.spend.session).toEqual({ inputTokens: 44, outputTokens: 60, totalTokens: 104, costUsd: 0.75 });
    expect(state.spend.run).toEqual({ inputTokens: 32, outputTokens: 40, totalTokens: 72, costUsd: 0.25 });
    expect([...state.spend.days.entries()]).toEqual([["2025-11-29", state.spend.session]]);
    expect(state.spend.budget).toEqual({ session: { costUsd: 1 } });
  });

  it("a compaction or branch summary with usage (its summary's LLM calls) adds to the run, session and day", () => {
    const log = createLogBuilder(3);
    log.add({ type: "session_created", config: CONFIG });
    log.add({ type: "agent_start" });
    const first = log.add({ type: "message_end", message: userMessage("q") });
    log.add({
      type: "compaction",
      summary: "s",
      firstKeptEntryId: first.meta.id,
      tokensBefore: 9,
      usage: used(100, 10, 0.5).usage,
    });
    log.add({ type: "agent_end", messages: [] });
    log.add({ type: "branch_summary", fromId: "root", summary: "b", usage: used(50, 5, 0.25).usage });
    log.add({ type: "branch_summary", fromId: "root", summary: "no usage recorded" });
    const state = foldSessionEvents(log.events);
    expect(state.spend.session).toEqual({ inputTokens: 154, outputTokens: 15, totalTokens: 169, costUsd: 0.75 });
    expect(state.spend.run).toEqual(state.spend.session);
    expect([...state.spend.days.values()]).toEqual([state.spend.session]);
  });

  it("an unfinished message counts at least chars/4 of what it streamed as output; a finished one its usage", () => {
    const cut = { ...used(10, 1, 0), content: [textOf("x".repeat(41))], stopReason: "error" as const };
    expect(spendOfMessage(cut)).toEqual({ inputTokens: 12, outputTokens: 11, totalTokens: 23, costUsd: 0 });
    expect(spendOfMessage({ ...cut, stopReason: "aborted" }).outputTokens).toBe(11);
    expect(spendOfMessage({ ...cut, stopReason: "stop" }).outputTokens).toBe(1);
    expect(spendOfMessage({ ...cut, usage: { ...cut.usage, output: 30 } }).outputTokens).toBe(30);
  });
});
