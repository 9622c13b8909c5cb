// The session decider: for a command and the session's fold, the outcome, the events its
// acceptance appends and the effects to start. Pure: time and ids come in through the context.
import { compactionSettingsOf, getEntry, type QueueKind, type SessionState, sessionActivity } from "@fleet/protocol";
import { type DraftEvent, enqueueDraft } from "../session-core/drafts.js";
import { continueRefusal, ENGINE_ERROR_TEXT } from "../session-core/run-refusals.js";
import {
  accepted,
  budgetRefused,
  busy,
  contextMessages,
  DECIDER_TEXT,
  type OutcomeContext,
  rejected,
} from "./command-outcomes.js";
import { configPatchOf, writes } from "./command-writes.js";
import { decideSetAgent } from "./decide-agent.js";
import { decideApproval } from "./decide-approval.js";
import { CHILD_TEXT, closedChild } from "./decide-child.js";
import { decideLifecycle } from "./decide-lifecycle.js";
import { decideCompact, decideCreate, decideImport, decideNavigate, decideReplay } from "./decide-tree.js";
import type { CommandInput, DecideContext, Decision, Effect } from "./decision.js";
import { messageFromInput } from "./message-input.js";

export { DECIDER_TEXT };

const QUEUE_OF: Record<"steer" | "follow_up" | "next_turn", QueueKind> = {
  steer: "steer",
  follow_up: "followUp",
  next_turn: "nextTurn",
};
const DELIVER_AS: Record<"steer" | "followUp" | "nextTurn", QueueKind> = {
  steer: "steer",
  followUp: "followUp",
  nextTurn: "nextTurn",
};

/** Commands that may create a session that does not exist yet. */
const CREATING: ReadonlySet<string> = new Set(["create_session", "prompt", "import_session", "replay"]);
/** Lifecycle commands decide a session without a log themselves (`decideLifecycle`). */
const LIFECYCLE: ReadonlySet<string> = new Set(["delete_session", "archive_session", "restore_session"]);

/** Deliveries after which a command no longer waits for a cut creation (about a minute at 2 s per nak). */
export const MAX_CREATION_WAITS = 30;

/** The id of an accepted creating command whose `session_created` the log lacks (with no config). */
function cutCreation(state: SessionState): string | undefined {
  for (const [id, record] of state.commands) {
    if (record.outcome === "accepted" && CREATING.has(record.type)) return id;
  }
  return undefined;
}

/**
 * Decides one command against the log's fold. Contract: never throws; every command that is not a
 * duplicate gets exactly one outcome event, first; the acceptance's own events follow it, marked
 * with the command id. A command whose id already has an outcome is `decideRedelivered`'s.
 */
export function decideCommand(
  state: SessionState,
  sessionId: string,
  input: CommandInput,
  decideCtx: DecideContext,
): Decision {
  const ctx: OutcomeContext = Object.assign({}, decideCtx, { outcomeId: decideCtx.newId() });
  if (!input.ok) return rejected(ctx, input.commandId, input.commandType, input.code, input.reason);
  const cmd = input.command;
  if (cmd.sessionId !== sessionId) {
    return rejected(
      ctx,
      cmd.id,
      cmd.type,
      "invalid",
      `sessionId ${JSON.stringify(cmd.sessionId)} differs from the subject's session ${JSON.stringify(sessionId)}`,
    );
  }
  // A session being deleted takes no command: its log is about to go.
  if (state.deleting) return rejected(ctx, cmd.id, cmd.type, "conflict", DECIDER_TEXT.deleting(sessionId));
  if (!state.tree.config && (decideCtx.deliveries ?? 1) < MAX_CREATION_WAITS) {
    const creation = cutCreation(state);
    if (creation) return { kind: "after_creation", commandId: creation };
  }
  const activity = sessionActivity(state);
  if (activity === "none" && !CREATING.has(cmd.type) && !LIFECYCLE.has(cmd.type)) {
    return rejected(ctx, cmd.id, cmd.type, "not_found", DECIDER_TEXT.notFound(sessionId));
  }
  switch (cmd.type) {
    case "delete_session":
    case "archive_session":
    case "restore_session":
      return decideLifecycle(state, sessionId, cmd, activity, ctx);
    case "create_session":
      return decideCreate(state, sessionId, cmd, ctx);
    case "import_session":
      return decideImport(state, sessionId, cmd, ctx);
    case "replay":
      return decideReplay(state, sessionId, cmd, ctx);
    case "prompt": {
      // A child's task after its parent closed it (a deposed owner's late prompt): it stays closed.
      if (closedChild(state, sessionId, cmd.id))
        return rejected(ctx, cmd.id, cmd.type, "conflict", CHILD_TEXT.closedFirst);
      const refused = busy(ctx, cmd, activity, ENGINE_ERROR_TEXT.promptBusy);
      if (refused) return refused;
      const message = messageFromInput(cmd, ctx.now);
      const overBudget = budgetRefused(state, ctx, cmd, [message]);
      if (overBudget) return overBudget;
      const created: DraftEvent[] =
        activity === "none" ? [{ id: ctx.newId(), body: { type: "session_created", config: ctx.defaults } }] : [];
      return accepted(ctx, cmd, created, [{ type: "start_run", kind: "prompt", messages: [message] }]);
    }
    case "steer":
    case "follow_up":
    case "next_turn":
      return accepted(ctx, cmd, [
        enqueueDraft(ctx.newId(), state.status.queues, QUEUE_OF[cmd.type], messageFromInput(cmd, ctx.now)),
      ]);
    case "continue": {
      const occupied = busy(ctx, cmd, activity, ENGINE_ERROR_TEXT.continueBusy);
      if (occupied) return occupied;
      const refused = continueRefusal(contextMessages(state.tree), state.status.queues);
      if (refused) return rejected(ctx, cmd.id, cmd.type, refused.code, refused.reason);
      return budgetRefused(state, ctx, cmd, []) ?? accepted(ctx, cmd, [], [{ type: "start_run", kind: "continue" }]);
    }
    case "abort": {
      const effects: Effect[] = [];
      if (state.compaction && !state.compaction.runId) effects.push({ type: "abort_compaction" });
      else if (state.status.isStreaming) effects.push({ type: "abort_run" });
      return accepted(ctx, cmd, [], effects);
    }
    case "set_model":
    case "set_thinking_level":
    case "set_name":
    case "append_custom":
      return accepted(ctx, cmd, writes(state, cmd, ctx));
    case "set_active_tools": {
      const unknown = cmd.toolNames.filter((n) => !ctx.isKnownTool(n));
      if (unknown.length > 0) return rejected(ctx, cmd.id, cmd.type, "not_found", DECIDER_TEXT.unknownTools(unknown));
      return accepted(ctx, cmd, writes(state, cmd, ctx));
    }
    case "label": {
      const target = getEntry(state.tree, cmd.targetId);
      if (!target.ok) return rejected(ctx, cmd.id, cmd.type, "not_found", target.error);
      return accepted(ctx, cmd, writes(state, cmd, ctx));
    }
    case "configure": {
      const unknown = (cmd.activeTools ?? []).filter((n) => !ctx.isKnownTool(n));
      if (unknown.length > 0) return rejected(ctx, cmd.id, cmd.type, "not_found", DECIDER_TEXT.unknownTools(unknown));
      const effects: Effect[] = configPatchOf(cmd) ? [{ type: "config_changed", systemPrompt: cmd.systemPrompt }] : [];
      return accepted(ctx, cmd, writes(state, cmd, ctx), effects);
    }
    case "append_message": {
      if (cmd.deliverAs) {
        return accepted(ctx, cmd, [
          enqueueDraft(ctx.newId(), state.status.queues, DELIVER_AS[cmd.deliverAs], cmd.message),
        ]);
      }
      if (cmd.triggerTurn && activity === "idle") {
        return (
          budgetRefused(state, ctx, cmd, [cmd.message]) ??
          accepted(ctx, cmd, [], [{ type: "start_run", kind: "prompt", messages: [cmd.message] }])
        );
      }
      return accepted(ctx, cmd, writes(state, cmd, ctx));
    }
    case "approve_tool_call":
    case "deny_tool_call":
      return decideApproval(state, cmd, ctx);
    case "set_agent":
      return decideSetAgent(state, cmd, ctx);
    case "set_approval_rules":
      return accepted(ctx, cmd, [{ id: ctx.newId(), body: { type: "approval_rules_set", rules: cmd.rules } }]);
    case "set_budget":
      return accepted(ctx, cmd, [{ id: ctx.newId(), body: { type: "budget_change", budget: cmd.budget } }]);
    case "set_compaction_settings": {
      const current = compactionSettingsOf(state.tree.config);
      const compaction = {
        enabled: cmd.enabled ?? current.enabled,
        reserveTokens: cmd.reserveTokens ?? current.reserveTokens,
        keepRecentTokens: cmd.keepRecentTokens ?? current.keepRecentTokens,
      };
      return accepted(ctx, cmd, [{ id: ctx.newId(), body: { type: "config_change", compaction } }]);
    }
    case "compact":
      return decideCompact(state, cmd, activity, ctx);
    case "navigate":
      return decideNavigate(state, cmd, activity, ctx);
    default: {
      const unknown = cmd as { id: string; type: string };
      return rejected(ctx, unknown.id, unknown.type, "unsupported", `unsupported command type ${unknown.type}`);
    }
  }
}
