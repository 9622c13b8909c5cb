// The session decider: for a command and the session's fold, the outcome, the events its
// acceptance appends and the effects to start. Pure: time and ids come in through the context.
import {
  type AgentMessage,
  applyConfigPatch,
  budgetExceededMessage,
  type CommandOf,
  type ContextMessage,
  childCommandIds,
  compactionSettingsOf,
  contextAtLeaf,
  entryToContextMessage,
  type FleetCommand,
  getBranch,
  getEntry,
  INLINE_CONTENT_BYTES,
  MAX_MESSAGE_BYTES,
  payloadBytes,
  prepareCompaction,
  type QueueKind,
  type RejectionCode,
  type SessionActivity,
  type SessionEntry,
  type SessionState,
  type SessionTree,
  type SessionWrite,
  sessionActivity,
  type Usage,
} from "@fleet/protocol";
import { continueRefusal, ENGINE_ERROR_TEXT } from "../engine/session-engine.js";
import { approvalExpired, isAwaitingApproval } from "./approval-gate.js";
import { budgetRefusal, summaryBudgetRefusal } from "./budget-refusal.js";
import { decideCreateFromAgent, decideSetAgent } from "./decide-agent.js";
import { CHILD_TEXT, withParent } from "./decide-child.js";
import { decideLifecycle } from "./decide-lifecycle.js";
import { replayDrafts } from "./decide-replay.js";
import type { CommandInput, DecideContext, Decision, Effect } from "./decision.js";
import { type DraftEvent, enqueueDraft, ofCommand } from "./drafts.js";
import { entriesToDrafts } from "./entries-to-drafts.js";
import { messageFromInput } from "./message-input.js";
import { decideSessionWrite } from "./session-write.js";

/** Commands that may create a session that does not exist yet. */
const CREATING: ReadonlySet<string> = new Set(["create_session", "prompt", "import_session", "replay"]);
/** Lifecycle commands decide a session without a log themselves (`decideLifecycle`). */
const LIFECYCLE: ReadonlySet<string> = new Set(["delete_session", "archive_session", "restore_session"]);

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

const isRunning = (activity: SessionActivity): boolean =>
  activity === "streaming" ||
  activity === "tools_pending" ||
  activity === "awaiting_approval" ||
  activity === "running";

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

// ---- outcomes -----------------------------------------------------------------------------------

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
function budgetRefused(
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
function oversizeEvent(drafts: readonly DraftEvent[]): string | undefined {
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

// ---- queues, writes, approvals ------------------------------------------------------------------

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

type WriteCommand = CommandOf<
  | "set_model"
  | "set_thinking_level"
  | "set_active_tools"
  | "label"
  | "set_name"
  | "append_custom"
  | "append_message"
  | "configure"
>;

/** The session writes a command asks for, in order (a `configure` may ask for three). */
export function commandWrites(cmd: WriteCommand): SessionWrite[] {
  switch (cmd.type) {
    case "set_model":
      return [{ type: "model_change", provider: cmd.provider, modelId: cmd.modelId }];
    case "set_thinking_level":
      return [{ type: "thinking_level_change", thinkingLevel: cmd.level }];
    case "set_active_tools":
      return [{ type: "active_tools_change", toolNames: cmd.toolNames.slice() }];
    case "label":
      return [{ type: "label", targetId: cmd.targetId, label: cmd.label }];
    case "set_name":
      return [{ type: "session_info", name: cmd.name }];
    case "append_custom":
      return [{ type: "custom", customType: cmd.customType, data: cmd.data }];
    case "append_message":
      return [{ type: "message", message: cmd.message }];
    case "configure": {
      const out: SessionWrite[] = [];
      if (cmd.model) out.push({ type: "model_change", provider: cmd.model.provider, modelId: cmd.model.modelId });
      if (cmd.thinkingLevel) out.push({ type: "thinking_level_change", thinkingLevel: cmd.thinkingLevel });
      if (cmd.activeTools) out.push({ type: "active_tools_change", toolNames: cmd.activeTools.slice() });
      return out;
    }
  }
}

/** The `config_change` of a `configure` (settings that are not tree entries), if it sets any. */
function configPatchOf(cmd: CommandOf<"configure">) {
  const patch = {
    ...(cmd.systemPrompt !== undefined ? { systemPrompt: cmd.systemPrompt } : {}),
    ...(cmd.steeringMode ? { steeringMode: cmd.steeringMode } : {}),
    ...(cmd.followUpMode ? { followUpMode: cmd.followUpMode } : {}),
    ...(cmd.toolExecution ? { toolExecution: cmd.toolExecution } : {}),
    ...(cmd.compaction ? { compaction: cmd.compaction } : {}),
  };
  return Object.keys(patch).length > 0 ? patch : undefined;
}

/**
 * The events of a write command: each write carried out now, or recorded as `pending_write` while a
 * run or compaction is open; a `configure`'s `config_change` is appended at once either way.
 */
export function writes(state: SessionState, cmd: WriteCommand, ctx: DecideContext): DraftEvent[] {
  const drafts = commandWrites(cmd).flatMap((w) => decideSessionWrite(state, w, cmd.id, ctx.newId));
  if (cmd.type === "configure") {
    const patch = configPatchOf(cmd);
    if (patch) drafts.push({ id: ctx.newId(), body: { type: "config_change", ...patch } });
    if (cmd.budget) drafts.push({ id: ctx.newId(), body: { type: "budget_change", budget: cmd.budget } });
  }
  return drafts;
}

export { isAwaitingApproval };

/**
 * `approve_tool_call` / `deny_tool_call`: the call must wait at its gate and its request must not
 * have expired at `ctx.now` (an expired one is refused `conflict`; the loop logs the expiry). Edited
 * arguments must fit the tool's schema (`invalid` otherwise); the decision records them as given.
 */
function decideApproval(
  state: SessionState,
  cmd: CommandOf<"approve_tool_call" | "deny_tool_call">,
  ctx: OutcomeContext,
): Decision {
  if (!isAwaitingApproval(state, cmd.toolCallId)) {
    return rejected(ctx, cmd.id, cmd.type, "not_found", DECIDER_TEXT.notWaiting(cmd.toolCallId));
  }
  if (approvalExpired(state, cmd.toolCallId, ctx.now)) {
    return rejected(ctx, cmd.id, cmd.type, "conflict", DECIDER_TEXT.approvalExpired(cmd.toolCallId));
  }
  if (cmd.type === "approve_tool_call" && cmd.args !== undefined) {
    const toolName = state.approvals.get(cmd.toolCallId)?.toolName ?? "";
    const valid = ctx.validateToolArgs?.(toolName, cmd.args) ?? { ok: true };
    if (!valid.ok) return rejected(ctx, cmd.id, cmd.type, "invalid", DECIDER_TEXT.badEditedArgs(toolName, valid.error));
  }
  return accepted(ctx, cmd, [approvalDraft(ctx, cmd)], [{ type: "approval_decided", toolCallId: cmd.toolCallId }]);
}

export function approvalDraft(ctx: DecideContext, cmd: CommandOf<"approve_tool_call" | "deny_tool_call">): DraftEvent {
  return {
    id: ctx.newId(),
    body:
      cmd.type === "approve_tool_call"
        ? {
            type: "tool_approval_resolved",
            toolCallId: cmd.toolCallId,
            approved: true,
            ...(cmd.args !== undefined ? { editedArgs: cmd.args } : {}),
          }
        : {
            type: "tool_approval_resolved",
            toolCallId: cmd.toolCallId,
            approved: false,
            ...(cmd.reason !== undefined ? { reason: cmd.reason } : {}),
          },
  };
}

/**
 * A child's own create or prompt (`sub.<child>.create|prompt`) that comes after its parent's close
 * (`sub.<child>.abort|cancel`, accepted or rejected): a deposed parent owner's late publish.
 */
function closedChild(state: SessionState, sessionId: string, commandId: string): boolean {
  const ids = childCommandIds(sessionId);
  if (commandId !== ids.create && commandId !== ids.prompt) return false;
  return state.commands.has(ids.abort) || state.commands.has(ids.cancel);
}

// ---- session lifecycle --------------------------------------------------------------------------

function decideCreate(
  state: SessionState,
  sessionId: string,
  cmd: CommandOf<"create_session">,
  ctx: OutcomeContext,
): Decision {
  if (state.tree.config) return rejected(ctx, cmd.id, cmd.type, "conflict", DECIDER_TEXT.exists(sessionId));
  if (cmd.parent) {
    if (cmd.forkFrom) return rejected(ctx, cmd.id, cmd.type, "invalid", CHILD_TEXT.withFork);
    // Closed before it existed (a deposed owner's late create after the new owner's close): no child.
    if (closedChild(state, sessionId, cmd.id))
      return rejected(ctx, cmd.id, cmd.type, "conflict", CHILD_TEXT.closedFirst);
    const { parent, ...orphan } = cmd;
    return withParent(decideCreate(state, sessionId, orphan, ctx), parent);
  }
  if (cmd.agent !== undefined) return decideCreateFromAgent(cmd, cmd.agent, ctx);
  if (!cmd.forkFrom) {
    const config = applyConfigPatch(ctx.defaults, cmd.config ?? {});
    return accepted(ctx, cmd, [{ id: ctx.newId(), body: { type: "session_created", config } }]);
  }
  const fork = forkDrafts(cmd, ctx);
  if (!fork.ok) return fork.decision;
  return accepted(ctx, cmd, fork.drafts);
}

/** `session_created {forkedFrom}` and the copied root→entry path of the source. */
export function forkDrafts(
  cmd: CommandOf<"create_session">,
  ctx: OutcomeContext,
  assignedEntryIds: readonly string[] = [],
): { ok: true; drafts: DraftEvent[] } | { ok: false; decision: Decision } {
  const from = cmd.forkFrom as NonNullable<typeof cmd.forkFrom>;
  if (ctx.forkSource === undefined)
    return { ok: false, decision: { kind: "needs_fork_source", sessionId: from.sessionId } };
  const source = ctx.forkSource;
  if (!source?.config) {
    return { ok: false, decision: rejected(ctx, cmd.id, cmd.type, "not_found", DECIDER_TEXT.notFound(from.sessionId)) };
  }
  const branch = getBranch(source, from.entryId);
  if (!branch.ok) return { ok: false, decision: rejected(ctx, cmd.id, cmd.type, "not_found", branch.error) };
  const config = applyConfigPatch(source.config, cmd.config ?? {});
  const created: DraftEvent = { id: ctx.newId(), body: { type: "session_created", config, forkedFrom: from } };
  const copied = entriesToDrafts(branch.entries, ctx.newId, assignedEntryIds).drafts;
  return { ok: true, drafts: [created, ...copied] };
}

/** `replay`: needs the source's tree (`forkSource`); the turns start once it is accepted. */
function decideReplay(state: SessionState, sessionId: string, cmd: CommandOf<"replay">, ctx: OutcomeContext): Decision {
  if (state.tree.config) return rejected(ctx, cmd.id, cmd.type, "conflict", DECIDER_TEXT.exists(sessionId));
  const unknown = (cmd.replayOf.overrides?.activeTools ?? []).filter((n) => !ctx.isKnownTool(n));
  if (unknown.length > 0) return rejected(ctx, cmd.id, cmd.type, "not_found", DECIDER_TEXT.unknownTools(unknown));
  if (ctx.forkSource === undefined) return { kind: "needs_fork_source", sessionId: cmd.replayOf.sessionId };
  if (!ctx.forkSource) {
    return rejected(ctx, cmd.id, cmd.type, "not_found", DECIDER_TEXT.notFound(cmd.replayOf.sessionId));
  }
  const replay = replayDrafts(cmd, ctx.forkSource, ctx.newId);
  if (!replay.ok) return rejected(ctx, cmd.id, cmd.type, replay.code, replay.reason);
  return accepted(ctx, cmd, replay.drafts);
}

function decideImport(
  state: SessionState,
  sessionId: string,
  cmd: CommandOf<"import_session">,
  ctx: OutcomeContext,
): Decision {
  if (state.tree.config) return rejected(ctx, cmd.id, cmd.type, "conflict", DECIDER_TEXT.exists(sessionId));
  const ids = new Set<string>();
  for (const e of cmd.entries) {
    if (ids.has(e.id)) return rejected(ctx, cmd.id, cmd.type, "invalid", `duplicate entry id ${e.id}`);
    if (e.parentId !== null && !ids.has(e.parentId)) {
      return rejected(ctx, cmd.id, cmd.type, "invalid", `entry ${e.id} comes before its parent ${e.parentId}`);
    }
    ids.add(e.id);
  }
  if (cmd.leafId && !ids.has(cmd.leafId)) {
    return rejected(ctx, cmd.id, cmd.type, "not_found", `Entry ${cmd.leafId} not found`);
  }
  const tooLarge = cmd.entries.findIndex((e) => payloadBytes(JSON.stringify(e)) > MAX_IMPORTED_ENTRY_BYTES);
  if (tooLarge >= 0) {
    const e = cmd.entries[tooLarge] as SessionEntry;
    const size = payloadBytes(JSON.stringify(e));
    return rejected(
      ctx,
      cmd.id,
      cmd.type,
      "invalid",
      `entry ${tooLarge} (${e.type} ${e.id}) is ${size} bytes; an imported entry becomes one event and may be at most ${MAX_IMPORTED_ENTRY_BYTES} (text and image blocks over ${INLINE_CONTENT_BYTES} bytes go by reference and do not count)`,
    );
  }
  return accepted(ctx, cmd, importDrafts(cmd, ctx));
}

/** An imported entry's JSON at most: its event adds `meta` and must stay within one message. */
const MAX_IMPORTED_ENTRY_BYTES = MAX_MESSAGE_BYTES - 64 * 1024;

/** `session_created`, the imported entries and, when the leaf is not the last entry, a `leaf` event. */
export function importDrafts(
  cmd: CommandOf<"import_session">,
  ctx: DecideContext,
  assignedEntryIds: readonly string[] = [],
): DraftEvent[] {
  const config = applyConfigPatch(ctx.defaults, cmd.config ?? {});
  const created: DraftEvent = { id: ctx.newId(), body: { type: "session_created", config } };
  const { drafts, idMap } = entriesToDrafts(cmd.entries, ctx.newId, assignedEntryIds);
  const out = [created, ...drafts];
  const lastId = drafts.at(-1)?.id ?? null;
  if (cmd.leafId !== undefined) {
    const wanted = cmd.leafId === null ? null : (idMap.get(cmd.leafId) ?? null);
    if (wanted !== lastId) out.push({ id: ctx.newId(), body: { type: "leaf", targetId: wanted } });
  }
  return out;
}

// ---- compaction and navigation ------------------------------------------------------------------

function decideCompact(
  state: SessionState,
  cmd: CommandOf<"compact">,
  activity: SessionActivity,
  ctx: OutcomeContext,
): Decision {
  const occupied = busy(ctx, cmd, activity, DECIDER_TEXT.compactBusy);
  if (occupied) return occupied;
  const branch = getBranch(state.tree, state.tree.leafId);
  if (!branch.ok) return rejected(ctx, cmd.id, cmd.type, "not_found", branch.error);
  const plan = prepareCompaction(branch.entries, compactionSettingsOf(state.tree.config).keepRecentTokens);
  if (!plan.ok) return rejected(ctx, cmd.id, cmd.type, "conflict", plan.error);
  const over = summaryBudgetRefusal(state, [...plan.messages, ...plan.turnPrefixMessages], ctx.tenantBudget);
  if (over) return rejected(ctx, cmd.id, cmd.type, "budget_exceeded", budgetExceededMessage(over));
  const start: DraftEvent = {
    id: ctx.newId(),
    body: {
      type: "compaction_start",
      reason: "manual",
      ...(cmd.instructions !== undefined ? { instructions: cmd.instructions } : {}),
    },
  };
  return accepted(ctx, cmd, [start], [{ type: "compact", compactionId: start.id }]);
}

function decideNavigate(
  state: SessionState,
  cmd: CommandOf<"navigate">,
  activity: SessionActivity,
  ctx: OutcomeContext,
): Decision {
  const occupied = busy(ctx, cmd, activity, DECIDER_TEXT.navigateBusy);
  if (occupied) return occupied;
  const move = navigationTarget(state.tree, cmd.targetId);
  if (!move.ok) return rejected(ctx, cmd.id, cmd.type, "not_found", move.error);
  const newLeaf = move.leafId;
  const oldLeaf = state.tree.leafId;
  let summary: { summary: string; usage?: Usage } | undefined;
  if (cmd.summarize && oldLeaf !== null && newLeaf !== oldLeaf) {
    if (!ctx.branchSummary) {
      const settings = sessionModel(state.tree);
      const messages = entriesLeft(state.tree, oldLeaf, newLeaf)
        .map((e) => entryToContextMessage(e))
        .filter((m): m is NonNullable<typeof m> => m !== undefined && m.role !== "toolResult");
      const over = summaryBudgetRefusal(state, messages, ctx.tenantBudget);
      if (over) return rejected(ctx, cmd.id, cmd.type, "budget_exceeded", budgetExceededMessage(over));
      return {
        kind: "needs_branch_summary",
        messages,
        instructions: cmd.instructions,
        model: settings.model,
        thinkingLevel: settings.thinkingLevel,
      };
    }
    if (!ctx.branchSummary.ok) return rejected(ctx, cmd.id, cmd.type, "conflict", ctx.branchSummary.error);
    summary = ctx.branchSummary;
  }
  const events: DraftEvent[] = [];
  let labelTarget: string | null = cmd.targetId;
  if (summary !== undefined) {
    const id = ctx.newId();
    const { usage } = summary;
    events.push({
      id,
      body: {
        type: "branch_summary",
        fromId: newLeaf ?? "root",
        summary: summary.summary,
        ...(usage ? { usage } : {}),
      },
      parentId: newLeaf,
    });
    labelTarget = id;
  } else if (newLeaf !== oldLeaf) {
    events.push({ id: ctx.newId(), body: { type: "leaf", targetId: newLeaf } });
  }
  if (cmd.label && labelTarget) {
    events.push(
      ...decideSessionWrite(state, { type: "label", targetId: labelTarget, label: cmd.label }, cmd.id, ctx.newId),
    );
  }
  return accepted(ctx, cmd, events);
}

/**
 * Where `navigate` moves the leaf: the target, or (pi: re-open a user or custom message for
 * editing) its parent.
 */
export function navigationTarget(
  tree: SessionTree,
  targetId: string | null,
): { ok: true; leafId: string | null } | { ok: false; error: string } {
  if (targetId === null) return { ok: true, leafId: null };
  const target = getEntry(tree, targetId);
  if (!target.ok) return target;
  const t = target.entry;
  const reopen = (t.type === "message" && t.message.role === "user") || t.type === "custom_message";
  return { ok: true, leafId: reopen ? t.parentId : t.id };
}

/** Entries on the old branch below the deepest common ancestor with the new leaf, oldest first. */
function entriesLeft(tree: SessionTree, oldLeaf: string, newLeaf: string | null): SessionEntry[] {
  const oldPath = getBranch(tree, oldLeaf);
  const newPath = getBranch(tree, newLeaf);
  if (!oldPath.ok || !newPath.ok) return [];
  const common = new Set(newPath.entries.map((e) => e.id));
  return oldPath.entries.filter((e) => !common.has(e.id));
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
