// Commands that shape the session tree as a whole: create (or fork), replay, import, compact, navigate.
import {
  applyConfigPatch,
  budgetExceededMessage,
  type CommandOf,
  compactionSettingsOf,
  entryToContextMessage,
  getBranch,
  getEntry,
  INLINE_CONTENT_BYTES,
  MAX_MESSAGE_BYTES,
  payloadBytes,
  prepareCompaction,
  type SessionActivity,
  type SessionEntry,
  type SessionState,
  type SessionTree,
  type Usage,
} from "@fleet/protocol";
import type { DraftEvent } from "../session-core/drafts.js";
import { decideSessionWrite } from "../session-core/session-write.js";
import { summaryBudgetRefusal } from "./budget-refusal.js";
import { accepted, busy, DECIDER_TEXT, type OutcomeContext, rejected, sessionModel } from "./command-outcomes.js";
import { decideCreateFromAgent } from "./decide-agent.js";
import { CHILD_TEXT, closedChild, withParent } from "./decide-child.js";
import { replayDrafts } from "./decide-replay.js";
import type { DecideContext, Decision } from "./decision.js";
import { entriesToDrafts } from "./entries-to-drafts.js";

export function decideCreate(
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
export function decideReplay(
  state: SessionState,
  sessionId: string,
  cmd: CommandOf<"replay">,
  ctx: OutcomeContext,
): Decision {
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

export function decideImport(
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

export function decideCompact(
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

export function decideNavigate(
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
export function entriesLeft(tree: SessionTree, oldLeaf: string, newLeaf: string | null): SessionEntry[] {
  const oldPath = getBranch(tree, oldLeaf);
  const newPath = getBranch(tree, newLeaf);
  if (!oldPath.ok || !newPath.ok) return [];
  const common = new Set(newPath.entries.map((e) => e.id));
  return oldPath.entries.filter((e) => !common.has(e.id));
}
