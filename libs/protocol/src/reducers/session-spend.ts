// What a session's LLM calls spent, folded from its log: per run, per session, per UTC day.
import { addSpend, emptySpend, type SessionBudget, type Spend, spendOfUsage, utcDayOf } from "../budget.js";
import type { FleetEvent } from "../events.js";

/**
 * Spend and budget of one session. Every assistant `message_end` adds its `usage` (an aborted or
 * budget-stopped message adds what it carries: the provider's input count and the output estimated
 * from its streamed text).
 */
export interface SessionSpend {
  /** The budget in force: `session_created.config.budget`, then each `budget_change`. */
  budget: SessionBudget;
  /** Since the session was created. */
  session: Spend;
  /** Since the last `agent_start` (the open run's, or the last run's once it ended). */
  run: Spend;
  /** By UTC day of the `message_end`'s `meta.ts` (`YYYY-MM-DD`). */
  days: Map<string, Spend>;
}

export function initialSessionSpend(): SessionSpend {
  return { budget: {}, session: emptySpend(), run: emptySpend(), days: new Map() };
}

/** Applies one event in place. Contract: never throws. */
export function foldSessionSpend(spend: SessionSpend, event: FleetEvent): void {
  switch (event.type) {
    case "session_created":
      spend.budget = event.config.budget ?? {};
      return;
    case "budget_change":
      spend.budget = event.budget;
      return;
    case "agent_start":
      spend.run = emptySpend();
      return;
    case "message_end": {
      if (event.message.role !== "assistant") return;
      const used = spendOfUsage(event.message.usage);
      spend.session = addSpend(spend.session, used);
      spend.run = addSpend(spend.run, used);
      const day = utcDayOf(event.meta.ts);
      spend.days.set(day, addSpend(spend.days.get(day) ?? emptySpend(), used));
      return;
    }
  }
}
