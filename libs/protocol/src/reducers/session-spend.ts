// What a session's LLM calls spent, folded from its log: per run, per session, per UTC day.
import { addSpend, emptySpend, type SessionBudget, type Spend, spendOfUsage, utcDayOf } from "../budget.js";
import type { FleetEvent } from "../events.js";
import type { AssistantMessage } from "../messages.js";
import { childSpendOf } from "../sub-agents.js";

/**
 * Spend and budget of one session. Every assistant `message_end` adds its `usage`, and so does a
 * `compaction` or `branch_summary` that carries one (its summary's LLM calls). A message that
 * did not finish (stopReason `error` or `aborted`: cut by an abort, a budget or a crash) counts at
 * least chars/4 of the content it streamed as output, since a provider that was cut off never
 * reported its count; so what streamed before a worker died is spent for the next owner too. An
 * `agent` call's `tool_execution_end` adds its child's spend to the run and session (change 57).
 */
export interface SessionSpend {
  /** The budget in force: `session_created.config.budget`, then each `budget_change`. */
  budget: SessionBudget;
  /** Since the session was created. */
  session: Spend;
  /** Since the last `agent_start` (the open run's, or the last run's once it ended). */
  run: Spend;
  /** By UTC day of the spending event's `meta.ts` (`YYYY-MM-DD`). */
  days: Map<string, Spend>;
}

export function initialSessionSpend(): SessionSpend {
  return { budget: {}, session: emptySpend(), run: emptySpend(), days: new Map() };
}

/** The event types that may change a session's spend. */
export const SESSION_SPEND_EVENT_TYPES: ReadonlySet<FleetEvent["type"]> = new Set<FleetEvent["type"]>([
  "session_created",
  "budget_change",
  "agent_change",
  "agent_start",
  "message_end",
  "compaction",
  "branch_summary",
  "tool_execution_end",
]);

/**
 * Applies one event in place (the totals and day records too: hand them out only to code that does
 * not keep them across a fold). Contract: never throws.
 */
export function foldSessionSpend(spend: SessionSpend, event: FleetEvent): void {
  switch (event.type) {
    case "session_created":
      spend.budget = event.config.budget ?? {};
      return;
    case "budget_change":
      spend.budget = event.budget;
      return;
    case "agent_change":
      if (event.budget) spend.budget = event.budget;
      return;
    case "agent_start":
      spend.run = emptySpend();
      return;
    case "tool_execution_end": {
      // A child's spend (change 57): the parent's budget counts it; the tenant's day counts the child.
      const child = childSpendOf(event.toolName, event.result.details);
      if (child) {
        addInto(spend.session, child);
        addInto(spend.run, child);
      }
      return;
    }
    default: {
      const used = spendOfEvent(event);
      if (used) add(spend, used, event.meta.ts);
    }
  }
}

/** What an event spent: an assistant `message_end`, or a summary entry that carries `usage`. */
export function spendOfEvent(event: FleetEvent): Spend | undefined {
  if (event.type === "message_end")
    return event.message.role === "assistant" ? spendOfMessage(event.message) : undefined;
  if (event.type === "compaction" || event.type === "branch_summary") {
    return event.usage ? spendOfUsage(event.usage) : undefined;
  }
  return undefined;
}

/** Adds in place: the totals and the day records are the fold's own (`copySessionState` copies them). */
function add(spend: SessionSpend, used: Spend, ts: number): void {
  addInto(spend.session, used);
  addInto(spend.run, used);
  const day = utcDayOf(ts);
  const spent = spend.days.get(day);
  if (spent) addInto(spent, used);
  else spend.days.set(day, addSpend(emptySpend(), used));
}

function addInto(total: Spend, used: Spend): void {
  total.inputTokens += used.inputTokens;
  total.outputTokens += used.outputTokens;
  total.totalTokens += used.totalTokens;
  total.costUsd += used.costUsd;
}

/** `spendOfUsage`, with an unfinished message's output at least chars/4 of its streamed content. */
export function spendOfMessage(message: AssistantMessage): Spend {
  const used = spendOfUsage(message.usage);
  if (message.stopReason !== "error" && message.stopReason !== "aborted") return used;
  let chars = 0;
  for (const block of message.content) {
    if (block.type === "text") chars += block.text.length;
    else if (block.type === "thinking") chars += block.thinking.length;
    else if (block.type === "toolCall") chars += JSON.stringify(block.arguments).length;
  }
  const estimate = Math.ceil(chars / 4);
  if (estimate <= used.outputTokens) return used;
  return { ...used, outputTokens: estimate, totalTokens: used.inputTokens + estimate };
}
