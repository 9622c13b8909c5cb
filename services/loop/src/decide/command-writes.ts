// Session writes a command asks for (model, thinking level, tools, labels, names, custom entries,
// messages, configuration): carried out at once, or recorded as pending while a run or compaction is open.
import type { CommandOf, SessionState, SessionWrite } from "@fleet/protocol";
import type { DraftEvent } from "../session-core/drafts.js";
import { decideSessionWrite } from "../session-core/session-write.js";
import type { DecideContext } from "./decision.js";

export type WriteCommand = CommandOf<
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
export function configPatchOf(cmd: CommandOf<"configure">) {
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
