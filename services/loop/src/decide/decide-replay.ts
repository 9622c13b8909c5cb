// `replay` (change 51): a new session that forks its source at an entry and records what it runs
// again; the turns themselves are the actor's to start (`decideReplayTurn`).
import { applyConfigPatch, type CommandOf, planReplay, type ReplayOverrides } from "@fleet/protocol";
import type { DraftEvent } from "../session-core/drafts.js";
import { entriesToDrafts } from "./entries-to-drafts.js";

/**
 * The acceptance's events of a `replay`: `session_created {config, forkedFrom?, replayOf}`, the
 * source's branch up to the fork point (fresh ids, `assignedEntryIds` first), then the model,
 * thinking level and active tools overrides as entries (so they win over the copied ones).
 */
export function replayDrafts(
  cmd: CommandOf<"replay">,
  source: import("@fleet/protocol").SessionTree,
  newId: () => string,
  assignedEntryIds: readonly string[] = [],
): { ok: true; drafts: DraftEvent[] } | { ok: false; code: "not_found" | "invalid"; reason: string } {
  const request = cmd.replayOf;
  if (!source.config) return { ok: false, code: "not_found", reason: `Session ${request.sessionId} not found` };
  const plan = planReplay(source, request);
  if (!plan.ok) return { ok: false, code: plan.code, reason: plan.error };
  const overrides = plan.record.overrides;
  const config = applyConfigPatch(source.config, overridePatch(overrides));
  const from = plan.record.fromEntry;
  const created: DraftEvent = {
    id: newId(),
    body: {
      type: "session_created",
      config,
      ...(from !== null ? { forkedFrom: { sessionId: request.sessionId, entryId: from } } : {}),
      replayOf: plan.record,
    },
  };
  const copied = entriesToDrafts(plan.kept, newId, assignedEntryIds).drafts;
  const settings: DraftEvent[] = [];
  if (copied.length > 0) {
    if (overrides.model) settings.push({ id: newId(), body: { type: "model_change", ...overrides.model } });
    if (overrides.thinkingLevel) {
      settings.push({ id: newId(), body: { type: "thinking_level_change", thinkingLevel: overrides.thinkingLevel } });
    }
    if (overrides.activeTools) {
      settings.push({ id: newId(), body: { type: "active_tools_change", toolNames: overrides.activeTools.slice() } });
    }
  }
  return { ok: true, drafts: [created, ...copied, ...settings] };
}

const overridePatch = (o: ReplayOverrides) => ({
  ...(o.model ? { model: o.model } : {}),
  ...(o.thinkingLevel ? { thinkingLevel: o.thinkingLevel } : {}),
  ...(o.systemPrompt !== undefined ? { systemPrompt: o.systemPrompt } : {}),
  ...(o.activeTools ? { activeTools: o.activeTools.slice() } : {}),
});
