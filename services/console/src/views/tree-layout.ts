// Lays a session tree out as rows and lanes (pure): depth-first, a first child stays in its parent's
// lane, every other child opens a new lane.
import { getBranch, getTree, type SessionEntry, type SessionTree } from "@fleet/protocol";

export interface TreeRow {
  entry: SessionEntry;
  row: number;
  lane: number;
  /** Row and lane of the parent, if it has one. */
  parent: { row: number; lane: number } | undefined;
}

export function layoutTree(tree: SessionTree): { rows: TreeRow[]; lanes: number } {
  const view = getTree(tree);
  const byId = new Map(tree.entries.map((e) => [e.id, e]));
  const rows: TreeRow[] = [];
  const placed = new Map<string, { row: number; lane: number }>();
  let lanes = 0;
  const stack: { id: string; lane: number }[] = [];
  for (const root of [...view.roots].reverse()) stack.push({ id: root, lane: -1 });
  while (stack.length) {
    const { id, lane: asked } = stack.pop() as { id: string; lane: number };
    const entry = byId.get(id);
    if (!entry || placed.has(id)) continue;
    const lane = asked >= 0 ? asked : lanes++;
    const parent = entry.parentId ? placed.get(entry.parentId) : undefined;
    const at = { row: rows.length, lane };
    placed.set(id, at);
    rows.push({ entry, ...at, parent });
    const children = view.children[id] ?? [];
    for (let i = children.length - 1; i >= 0; i--) stack.push({ id: children[i] as string, lane: i === 0 ? lane : -1 });
  }
  return { rows, lanes: Math.max(lanes, 1) };
}

/** What the graph marks beyond the layout: the active branch, what compaction summarized, the forks. */
export interface TreeFacts {
  /** Entries from the root to the leaf (the branch the next prompt continues). */
  onPath: ReadonlySet<string>;
  /** Entries of the active branch that its latest compaction replaced with a summary. */
  compacted: ReadonlySet<string>;
  /** Entries with more than one child, and how many. */
  forks: ReadonlyMap<string, number>;
  /** Branches: entries without children. */
  tips: number;
}

export function treeFacts(tree: SessionTree): TreeFacts {
  const view = getTree(tree);
  const branch = getBranch(tree);
  const path = branch.ok ? branch.entries : [];
  const compacted = new Set<string>();
  const last = path.findLastIndex((e) => e.type === "compaction");
  const compaction = path[last];
  if (compaction?.type === "compaction") {
    const kept = path.findIndex((e) => e.id === compaction.firstKeptEntryId);
    for (let i = 0; i < (kept >= 0 ? Math.min(kept, last) : 0); i++) compacted.add((path[i] as SessionEntry).id);
  }
  const forks = new Map<string, number>();
  let tips = 0;
  for (const entry of tree.entries) {
    const n = view.children[entry.id]?.length ?? 0;
    if (n > 1) forks.set(entry.id, n);
    if (n === 0) tips++;
  }
  return { onPath: new Set(path.map((e) => e.id)), compacted, forks, tips };
}

/** A one-line description of an entry. */
export function describeEntry(entry: SessionEntry): string {
  switch (entry.type) {
    case "message": {
      const m = entry.message;
      if (m.role === "user")
        return `user: ${clip(typeof m.content === "string" ? m.content : m.content.map((b) => (b.type === "text" ? b.text : "")).join(" "))}`;
      if (m.role === "assistant") {
        const calls = m.content.filter((b) => b.type === "toolCall").map((b) => b.name);
        const text = m.content.map((b) => (b.type === "text" ? b.text : "")).join(" ");
        return `assistant: ${clip(text)}${calls.length ? ` [${calls.join(", ")}]` : ""}`;
      }
      if (m.role === "toolResult") return `${m.isError ? "✗" : "✓"} ${m.toolName} result`;
      return "message";
    }
    case "compaction":
      return `compaction (${entry.tokensBefore} tokens before): ${clip(entry.summary)}`;
    case "branch_summary":
      return `branch summary: ${clip(entry.summary)}`;
    case "label":
      return `label ${entry.label ?? "(removed)"}`;
    case "session_info":
      return `name: ${entry.name}`;
    case "model_change":
      return `model ${entry.provider}/${entry.modelId}`;
    case "thinking_level_change":
      return `thinking ${entry.thinkingLevel}`;
    default:
      return entry.type;
  }
}

function clip(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > 60 ? `${flat.slice(0, 60)}…` : flat;
}
