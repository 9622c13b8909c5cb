// A command whose id already has an outcome in the log (a redelivery after a crash, or a client
// re-sending it): nothing new is decided, but an acceptance that a crash cut short is completed.
import { applyConfigPatch, type FleetCommand, runCursorOf, type SessionState } from "@fleet/protocol";
import { type DraftEvent, enqueueDraft, ofCommand } from "../session-core/drafts.js";
import { isAwaitingApproval } from "./approval-gate.js";
import { commandWrites, writes } from "./command-writes.js";
import { decideCreateFromAgent } from "./decide-agent.js";
import { approvalDraft } from "./decide-approval.js";
import { withParent } from "./decide-child.js";
import { decideCommand } from "./decide-command.js";
import { decideLifecycleRedelivered } from "./decide-lifecycle.js";
import { replayDrafts } from "./decide-replay.js";
import { forkDrafts, importDrafts } from "./decide-tree.js";
import type { DecideContext, Decision, Effect } from "./decision.js";
import { messageFromInput } from "./message-input.js";
import { unstartedRun } from "./unstarted-run.js";

const NOTHING: Decision = { kind: "decided", events: [], effects: [] };

/**
 * The rest of an accepted command's acceptance: the events of it that are not in the log yet (the
 * log counts them by `meta.commandId`), and the effect a crash kept from starting (a prompt whose run
 * never began). A rejected command, or a complete acceptance, decides nothing.
 */
export function decideRedelivered(state: SessionState, cmd: FleetCommand, ctx: DecideContext): Decision {
  const record = state.commands.get(cmd.id);
  if (record?.outcome !== "accepted") return NOTHING;
  const done = record.events;
  const rest = (drafts: readonly DraftEvent[], effects: Effect[] = []): Decision => ({
    kind: "decided",
    events: ofCommand(cmd.id, drafts.slice(done)),
    effects,
  });
  switch (cmd.type) {
    case "prompt":
    case "continue":
    case "append_message": {
      if (cmd.type === "append_message" && cmd.deliverAs) {
        const kind = cmd.deliverAs;
        return done > 0 ? NOTHING : rest([enqueueDraft(ctx.newId(), state.status.queues, kind, cmd.message)]);
      }
      const created: DraftEvent[] =
        cmd.type === "prompt" && !state.tree.config
          ? [{ id: ctx.newId(), body: { type: "session_created", config: ctx.defaults } }]
          : [];
      const cursor = state.cursor;
      const unstarted = cursor.kind === "idle" && cursor.pendingTrigger?.commandId === cmd.id;
      if (!unstarted) {
        if (cmd.type === "append_message" && !cmd.triggerTurn) return rest(writes(state, cmd, ctx));
        return NOTHING;
      }
      // The logged input; logs from before `command_accepted.messages` have none.
      const effect: Effect =
        unstartedRun(state) ??
        (cmd.type === "continue"
          ? { type: "start_run", kind: "continue" }
          : {
              type: "start_run",
              kind: "prompt",
              messages: [cmd.type === "prompt" ? messageFromInput(cmd, ctx.now) : cmd.message],
            });
      return { kind: "decided", events: ofCommand(cmd.id, created), effects: [effect] };
    }
    case "steer":
    case "follow_up":
    case "next_turn": {
      if (done > 0) return NOTHING;
      const kind = cmd.type === "steer" ? "steer" : cmd.type === "follow_up" ? "followUp" : "nextTurn";
      return rest([enqueueDraft(ctx.newId(), state.status.queues, kind, messageFromInput(cmd, ctx.now))]);
    }
    case "set_model":
    case "set_thinking_level":
    case "set_active_tools":
    case "label":
    case "set_name":
    case "append_custom":
    case "configure":
      return done >= plannedWrites(cmd) ? NOTHING : rest(writes(state, cmd, ctx));
    case "approve_tool_call":
    case "deny_tool_call": {
      // Accepted, its decision cut: logged now (an expiry logged meanwhile is the decision then).
      if (!isAwaitingApproval(state, cmd.toolCallId)) return NOTHING;
      return {
        kind: "decided",
        events: ofCommand(cmd.id, [approvalDraft(ctx, cmd)]),
        effects: [{ type: "approval_decided", toolCallId: cmd.toolCallId }],
      };
    }
    case "set_approval_rules":
      return done > 0 ? NOTHING : rest([{ id: ctx.newId(), body: { type: "approval_rules_set", rules: cmd.rules } }]);
    case "set_budget":
      return done > 0 ? NOTHING : rest([{ id: ctx.newId(), body: { type: "budget_change", budget: cmd.budget } }]);
    case "abort": {
      // Only the run the abort was accepted in (its cursor has `abortRequested`): a later run, started
      // after that one ended, is not the abort's.
      const cursor = runCursorOf(state);
      const own = cursor.kind !== "idle" && cursor.abortRequested;
      return own ? { kind: "decided", events: [], effects: [{ type: "abort_run" }] } : NOTHING;
    }
    case "compact":
    case "navigate":
    case "set_compaction_settings":
      // Nothing of it appended yet: decide it again (a started compaction is the takeover's to
      // finish; a navigation that moved the leaf is done, a label it asked for aside).
      return done > 0 ? NOTHING : acceptanceAgain(state, cmd, ctx);
    case "set_agent": {
      const again = acceptanceAgain(state, cmd, ctx);
      return again.kind === "decided" ? rest(again.events) : again;
    }
    case "create_session": {
      // A child's link goes on its `session_created` however that is completed (change 57).
      if (cmd.parent) {
        const { parent, ...orphan } = cmd;
        return withParent(decideRedelivered(state, orphan, ctx), parent);
      }
      if (cmd.agent !== undefined) {
        // The version the log already names, if `session_created` is in it: the same one again.
        const pinned = state.tree.agent;
        const ref = pinned ? `${pinned.name}@${pinned.version}` : cmd.agent;
        const again = decideCreateFromAgent(cmd, ref, { ...ctx, outcomeId: "" });
        if (again.kind !== "decided") return again;
        if (again.events[0]?.body.type !== "command_accepted") return NOTHING;
        return rest(again.events.slice(1));
      }
      if (!cmd.forkFrom) {
        const config = { type: "session_created" as const, config: applyConfigPatch(ctx.defaults, cmd.config ?? {}) };
        return state.tree.config ? NOTHING : rest([{ id: ctx.newId(), body: config }]);
      }
      const fork = forkDrafts(cmd, { ...ctx, outcomeId: "" }, copiedIds(state));
      if (!fork.ok) return fork.decision.kind === "decided" ? NOTHING : fork.decision;
      return rest(fork.drafts);
    }
    case "import_session":
      return rest(importDrafts(cmd, ctx, copiedIds(state)));
    case "replay": {
      if (ctx.forkSource === undefined) return { kind: "needs_fork_source", sessionId: cmd.replayOf.sessionId };
      const replay = ctx.forkSource ? replayDrafts(cmd, ctx.forkSource, ctx.newId, copiedIds(state)) : undefined;
      return replay?.ok ? rest(replay.drafts) : NOTHING;
    }
    case "delete_session":
    case "archive_session":
    case "restore_session":
      return decideLifecycleRedelivered(state, cmd, ctx);
    default:
      return NOTHING;
  }
}

/** The ids of the entries a cut fork or import already appended (the new session holds only those). */
const copiedIds = (state: SessionState): string[] => state.tree.entries.map((e) => e.id);

/** The command decided again on the current log, without its outcome (already logged). */
function acceptanceAgain(state: SessionState, cmd: FleetCommand, ctx: DecideContext): Decision {
  const again = decideCommand(state, cmd.sessionId, { ok: true, command: cmd }, ctx);
  if (again.kind !== "decided") return again;
  if (again.events[0]?.body.type !== "command_accepted") return NOTHING;
  return { kind: "decided", events: again.events.slice(1), effects: again.effects };
}

/** How many events a write command's acceptance appends, at least (a message write may take two). */
function plannedWrites(cmd: Parameters<typeof commandWrites>[0]): number {
  const n = commandWrites(cmd).length;
  if (cmd.type !== "configure") return n;
  const configured =
    cmd.systemPrompt !== undefined || cmd.steeringMode || cmd.followUpMode || cmd.toolExecution || cmd.compaction;
  return n + (configured ? 1 : 0) + (cmd.budget ? 1 : 0);
}
