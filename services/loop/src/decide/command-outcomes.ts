// What every command's outcome is built from: the decider's rejection texts, the outcome events
// (`command_accepted` first, the acceptance's events marked with the command id), the busy and
// budget refusals, the size limit of an event, and the context the session would call now.
import {
  type AgentMessage,
  budgetExceededMessage,
  type ContextMessage,
  contextAtLeaf,
  type FleetCommand,
  INLINE_CONTENT_BYTES,
  MAX_MESSAGE_BYTES,
  payloadBytes,
  type RejectionCode,
  type SessionActivity,
  type SessionState,
  type SessionTree,
} from "@fleet/protocol";
import { type DraftEvent, ofCommand } from "../session-core/drafts.js";
import { budgetRefusal } from "./budget-refusal.js";
import type { DecideContext, Decision, Effect } from "./decision.js";

/** Rejection texts of the decider's own (pi's are in `ENGINE_ERROR_TEXT`). */
export const DECIDER_TEXT = {
  compacting: "A compaction is in progress",
  compactBusy: "Cannot compact while a run is active",
  navigateBusy: "Cannot navigate while a run is active",
  notWaiting: (toolCallId: string) => `No tool call ${toolCallId} is waiting for approval`,
  approvalExpired: (toolCallId: string) => `The approval request of tool call ${toolCallId} has expired`,
  badEditedArgs: (toolName: string, error: string) => `Edited arguments do not fit tool ${toolName}: ${error}`,
  notFound: (sessionId: string) => `Session ${sessionId} not found`,
  exists: (sessionId: string) => `Session ${sessionId} already exists`,
  deleting: (sessionId: string) => `Session ${sessionId} is being deleted`,
  deleteBusy: "Cannot delete a session while a run is active; abort it first",
  noArchive: (sessionId: string) => `No archive of session ${sessionId}`,
  unknownTools: (names: readonly string[]) => `Unknown tool${names.length > 1 ? "s" : ""}: ${names.join(", ")}`,
} as const;

export const isRunning = (activity: SessionActivity): boolean =>
  activity === "streaming" ||
  activity === "tools_pending" ||
  activity === "awaiting_approval" ||
  activity === "running";

/** The decide context with the outcome event's id, drawn first so the outcome has the first id. */
export interface OutcomeContext extends DecideContext {
  readonly outcomeId: string;
}

export function rejected(
  ctx: OutcomeContext,
  commandId: string,
  commandType: string,
  code: RejectionCode,
  reason: string,
): Decision {
  return {
    kind: "decided",
    events: [{ id: ctx.outcomeId, body: { type: "command_rejected", commandId, commandType, code, reason } }],
    effects: [],
  };
}

/** `budget_exceeded` when a run started now would start over a budget (`budgetRefusal`). */
export function budgetRefused(
  state: SessionState,
  ctx: OutcomeContext,
  cmd: FleetCommand,
  added: readonly AgentMessage[],
): Decision | undefined {
  const over = budgetRefusal(state, contextMessages(state.tree), added, ctx.tenantBudget);
  return over ? rejected(ctx, cmd.id, cmd.type, "budget_exceeded", budgetExceededMessage(over)) : undefined;
}

/** `busy` while a compaction is open, or (with `duringRun`) while a run is. */
export function busy(ctx: OutcomeContext, cmd: FleetCommand, activity: SessionActivity, duringRun: string) {
  if (activity === "compacting") return rejected(ctx, cmd.id, cmd.type, "busy", DECIDER_TEXT.compacting);
  if (isRunning(activity)) return rejected(ctx, cmd.id, cmd.type, "busy", duringRun);
  return undefined;
}

type PromptRun = Extract<Effect, { type: "start_run"; kind: "prompt" }>;

export function accepted(
  ctx: OutcomeContext,
  cmd: FleetCommand,
  events: readonly DraftEvent[],
  effects: Effect[] = [],
): Decision {
  // A run's input goes into the log with its acceptance: a worker that takes the run over delivers it.
  const input = effects.find((e): e is PromptRun => e.type === "start_run" && e.kind === "prompt");
  const messages = input ? { messages: input.messages.slice() } : {};
  // The caller's trace context goes into the log too: the spans derived from it join the caller's trace.
  const trace = cmd.traceparent
    ? { trace: { traceparent: cmd.traceparent, ...(cmd.tracestate ? { tracestate: cmd.tracestate } : {}) } }
    : {};
  const drafts: DraftEvent[] = [
    {
      id: ctx.outcomeId,
      body: { type: "command_accepted", commandId: cmd.id, commandType: cmd.type, ...messages, ...trace },
    },
    ...ofCommand(cmd.id, events),
  ];
  const oversize = oversizeEvent(drafts);
  if (oversize) return rejected(ctx, cmd.id, cmd.type, "invalid", oversize);
  return { kind: "decided", events: drafts, effects };
}

/** The largest JSON of an event body a command's acceptance may append (its `meta` and `entry` fit beside). */
export const MAX_EVENT_BODY_BYTES = MAX_MESSAGE_BYTES - 16 * 1024;

/**
 * Why one of the drafts would not fit in a message, or undefined. A command by reference may carry
 * fields of any size; only text and image blocks go by reference, so the others must fit.
 */
export function oversizeEvent(drafts: readonly DraftEvent[]): string | undefined {
  for (const draft of drafts) {
    let size: number;
    try {
      size = payloadBytes(JSON.stringify(draft.body));
    } catch {
      size = Number.POSITIVE_INFINITY;
    }
    if (size > MAX_EVENT_BODY_BYTES) {
      return `its ${draft.body.type} event would be ${size} bytes; an event may be at most ${MAX_EVENT_BODY_BYTES} (text and image blocks over ${INLINE_CONTENT_BYTES} bytes go by reference and do not count)`;
    }
  }
  return undefined;
}

/** The context at the leaf (pi's `state.messages`); read-only, valid until the next fold. */
export function contextMessages(tree: SessionTree): readonly ContextMessage[] {
  return contextAtLeaf(tree)?.messages ?? [];
}

/** The model and thinking level the session would call now (tree settings, then the config). */
export function sessionModel(tree: SessionTree) {
  const ctx = contextAtLeaf(tree);
  const config = tree.config;
  return {
    model: ctx?.model ?? config?.model ?? { provider: "anthropic", modelId: "unknown" },
    thinkingLevel: ctx ? ctx.thinkingLevel : (config?.thinkingLevel ?? "off"),
  };
}
