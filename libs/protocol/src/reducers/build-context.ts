// pi's buildSessionContext (pi-semantics §7.4) over a root→leaf path of session entries.
import type { ModelRef } from "../config.js";
import type { ContextMessage, ThinkingLevel } from "../messages.js";
import type { SessionEntry } from "../session-entry.js";

/** Settings that apply when the path has no entry setting them (from the session's config). */
export interface ContextDefaults {
  model: ModelRef | null;
  thinkingLevel: ThinkingLevel;
  activeToolNames: readonly string[] | null;
}

/** pi's defaults when there is no config: no model, thinking "off", every tool active. */
export const NO_CONTEXT_DEFAULTS: ContextDefaults = { model: null, thinkingLevel: "off", activeToolNames: null };

export interface PathContext {
  /** What the loop sends to `convertToLlm`. */
  messages: ContextMessage[];
  model: ModelRef | null;
  thinkingLevel: ThinkingLevel;
  /** `null` = every registered tool. */
  activeToolNames: readonly string[] | null;
}

/**
 * The context message an entry contributes: `message` → its message, `custom_message` → a custom
 * message, `branch_summary` → a branchSummary message, `compaction` → a compactionSummary message.
 * Timestamps of the built messages are the entry's. Other entries give `undefined`.
 */
export function entryToContextMessage(entry: SessionEntry): ContextMessage | undefined {
  switch (entry.type) {
    case "message":
      return entry.message;
    case "custom_message":
      return {
        role: "custom",
        customType: entry.customType,
        content: entry.content,
        display: entry.display,
        ...(entry.details !== undefined ? { details: entry.details } : {}),
        timestamp: entry.timestamp,
      };
    case "branch_summary":
      return { role: "branchSummary", summary: entry.summary, fromId: entry.fromId, timestamp: entry.timestamp };
    case "compaction":
      return {
        role: "compactionSummary",
        summary: entry.summary,
        tokensBefore: entry.tokensBefore,
        timestamp: entry.timestamp,
      };
    default:
      return undefined;
  }
}

/**
 * The settings after `entry`, given those before it (pi's rule, in path order): `thinking_level_change`
 * sets the level, `model_change` and every assistant message set the model, `active_tools_change`
 * sets the tools. Returns `settings` itself when the entry changes nothing.
 */
export function applySettingsEntry(settings: ContextDefaults, entry: SessionEntry): ContextDefaults {
  if (entry.type === "thinking_level_change") return { ...settings, thinkingLevel: entry.thinkingLevel };
  if (entry.type === "model_change")
    return { ...settings, model: { provider: entry.provider, modelId: entry.modelId } };
  if (entry.type === "message" && entry.message.role === "assistant") {
    const { provider, model } = entry.message;
    if (settings.model?.provider === provider && settings.model.modelId === model) return settings;
    return { ...settings, model: { provider, modelId: model } };
  }
  if (entry.type === "active_tools_change") return { ...settings, activeToolNames: entry.toolNames };
  return settings;
}

/**
 * Builds the context of a root→leaf `path` by pi's rules:
 * - settings: `thinking_level_change` sets the level, `model_change` and every assistant message set
 *   the model, `active_tools_change` sets the tools; later entries win; `defaults` otherwise;
 * - only the last `compaction` on the path counts: its summary comes first, then the path entries
 *   from the one whose id is `firstKeptEntryId` up to the compaction (none when that id is not before
 *   it on the path), then every entry after it;
 * - messages come from `message`, `custom_message` and non-empty `branch_summary` entries.
 * Contract: never throws.
 */
export function buildContextFromPath(
  path: readonly SessionEntry[],
  defaults: ContextDefaults = NO_CONTEXT_DEFAULTS,
): PathContext {
  let settings = defaults;
  let compactionIndex = -1;
  for (let i = 0; i < path.length; i++) {
    const entry = path[i] as SessionEntry;
    settings = applySettingsEntry(settings, entry);
    if (entry.type === "compaction") compactionIndex = i;
  }
  const { model, thinkingLevel, activeToolNames } = settings;

  const messages: ContextMessage[] = [];
  let from = 0;
  const compaction = path[compactionIndex];
  if (compaction?.type === "compaction") {
    messages.push(entryToContextMessage(compaction) as ContextMessage);
    let kept = false;
    for (let i = 0; i < compactionIndex; i++) {
      const entry = path[i] as SessionEntry;
      if (entry.id === compaction.firstKeptEntryId) kept = true;
      if (kept) pushPathMessage(messages, entry);
    }
    from = compactionIndex + 1;
  }
  for (let i = from; i < path.length; i++) pushPathMessage(messages, path[i] as SessionEntry);
  return { messages, model, thinkingLevel, activeToolNames };
}

/** Appends the message a path entry adds after the last compaction (compactions and empty summaries add none). */
function pushPathMessage(messages: ContextMessage[], entry: SessionEntry): void {
  if (entry.type === "compaction" || (entry.type === "branch_summary" && entry.summary === "")) return;
  const message = entryToContextMessage(entry);
  if (message) messages.push(message);
}

/**
 * Extends `context` (built by `buildContextFromPath`, owned by the caller) in place with an entry
 * added at the end of its path: the same as building the longer path again. Returns false, changing
 * nothing, for a `compaction` entry (it replaces the messages before it: build the path again).
 */
export function extendPathContext(context: PathContext, entry: SessionEntry): boolean {
  if (entry.type === "compaction") return false;
  const settings = applySettingsEntry(context, entry);
  context.model = settings.model;
  context.thinkingLevel = settings.thinkingLevel;
  context.activeToolNames = settings.activeToolNames;
  pushPathMessage(context.messages, entry);
  return true;
}
