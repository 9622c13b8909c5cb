import type { EventBody, SessionEntry } from "@fleet/protocol";

export interface ImportedEvent {
  id: string;
  ts: number;
  body: EventBody;
}

/**
 * Turns a tree (pi import or a fork's path) into the entry events of a new session. Every entry gets
 * a fresh id from `newId` (event ids are unique stream-wide; msgID dedup would drop reused ones);
 * parent links, label targets, compaction `firstKeptEntryId` and branch-summary `fromId` are
 * remapped. Entries keep their timestamps (`ts`). Entries whose parent is unknown hang off the root.
 * Order: the input order, which must list parents before children (pi files and getBranch do).
 */
export function entriesToEvents(
  entries: readonly SessionEntry[],
  newId: () => string,
): { events: ImportedEvent[]; idMap: Map<string, string> } {
  const idMap = new Map<string, string>();
  for (const e of entries) idMap.set(e.id, newId());
  const map = (id: string) => idMap.get(id) ?? id;
  const events: ImportedEvent[] = [];
  for (const e of entries) {
    const id = map(e.id);
    const entry = { id, parentId: e.parentId !== null && idMap.has(e.parentId) ? map(e.parentId) : null };
    const body = bodyOf(e, entry, map);
    if (body) events.push({ id, ts: e.timestamp, body });
  }
  return { events, idMap };
}

function bodyOf(
  e: SessionEntry,
  entry: { id: string; parentId: string | null },
  map: (id: string) => string,
): EventBody | undefined {
  switch (e.type) {
    case "message":
      return { type: "message_end", message: e.message, entry };
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
        entry,
      };
    case "model_change":
      return { type: "model_change", provider: e.provider, modelId: e.modelId, entry };
    case "thinking_level_change":
      return { type: "thinking_level_change", thinkingLevel: e.thinkingLevel, entry };
    case "active_tools_change":
      return { type: "active_tools_change", toolNames: e.toolNames, entry };
    case "compaction":
      return {
        type: "compaction",
        summary: e.summary,
        firstKeptEntryId: map(e.firstKeptEntryId),
        tokensBefore: e.tokensBefore,
        ...(e.details !== undefined ? { details: e.details } : {}),
        entry,
      };
    case "branch_summary":
      return {
        type: "branch_summary",
        fromId: e.fromId === "root" ? "root" : map(e.fromId),
        summary: e.summary,
        entry,
      };
    case "label":
      return { type: "label", targetId: map(e.targetId), label: e.label, entry };
    case "session_info":
      return { type: "session_info", name: e.name, entry };
    case "custom":
      return { type: "custom", customType: e.customType, data: e.data, entry };
    default:
      return undefined;
  }
}
