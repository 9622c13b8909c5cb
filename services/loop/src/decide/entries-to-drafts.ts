// A copied tree (a pi import, or a fork's path) as the entry events of a new session.
import type { EventDraft, SessionEntry } from "@fleet/protocol";
import type { DraftEvent } from "../session-core/drafts.js";

/**
 * Turns a tree into entry events. Every entry gets a fresh id (event ids are unique stream-wide;
 * msgID dedup would drop reused ones): the i-th entry takes `assigned[i]` when given (the ids a
 * cut acceptance already appended), else `newId()`. Parent links, label targets, compaction
 * `firstKeptEntryId` and branch-summary `fromId` are remapped; entries keep their timestamps.
 * Entries whose parent is unknown hang off the root. Order: the input order, which must list
 * parents before children (pi files and getBranch do).
 */
export function entriesToDrafts(
  entries: readonly SessionEntry[],
  newId: () => string,
  assigned: readonly string[] = [],
): { drafts: DraftEvent[]; idMap: Map<string, string> } {
  const idMap = new Map<string, string>();
  for (const [i, e] of entries.entries()) idMap.set(e.id, assigned[i] ?? newId());
  const map = (id: string) => idMap.get(id) ?? id;
  const drafts: DraftEvent[] = [];
  for (const e of entries) {
    const id = map(e.id);
    const body = bodyOf(e, map);
    const parentId = e.parentId !== null && idMap.has(e.parentId) ? map(e.parentId) : null;
    if (body) drafts.push({ id, body, parentId, ts: e.timestamp });
  }
  return { drafts, idMap };
}

function bodyOf(e: SessionEntry, map: (id: string) => string): EventDraft | undefined {
  switch (e.type) {
    case "message":
      return { type: "message_end", message: e.message };
    case "custom_message":
      return {
        type: "message_end",
        message: {
          role: "custom",
          customType: e.customType,
          content: e.content,
          display: e.display,
          ...(e.details !== undefined ? { details: e.details } : {}),
          timestamp: e.timestamp,
        },
      };
    case "model_change":
      return { type: "model_change", provider: e.provider, modelId: e.modelId };
    case "thinking_level_change":
      return { type: "thinking_level_change", thinkingLevel: e.thinkingLevel };
    case "active_tools_change":
      return { type: "active_tools_change", toolNames: e.toolNames };
    case "compaction":
      return {
        type: "compaction",
        summary: e.summary,
        firstKeptEntryId: map(e.firstKeptEntryId),
        tokensBefore: e.tokensBefore,
        ...(e.details !== undefined ? { details: e.details } : {}),
      };
    case "branch_summary":
      return {
        type: "branch_summary",
        fromId: e.fromId === "root" ? "root" : map(e.fromId),
        summary: e.summary,
      };
    case "label":
      return { type: "label", targetId: map(e.targetId), label: e.label };
    case "session_info":
      return { type: "session_info", name: e.name };
    case "custom":
      return { type: "custom", customType: e.customType, data: e.data };
    default:
      return undefined;
  }
}
