// Draws a session tree as text, marking the leaf (pure).
import type { SessionEntry } from "@fleet/protocol";
import type { Style } from "./ansi.js";
import { shortId, summarizeEntry } from "./format-entry.js";

export interface TreeInput {
  entries: readonly SessionEntry[];
  leafId: string | null;
  /** Entry id → label. */
  labels?: Readonly<Record<string, string>>;
}

/**
 * One line per entry, in creation order along each branch. A chain with one child per node stays
 * at one indentation; a node with several children opens one `├─`/`└─` branch per child. The leaf
 * is marked `◀ leaf`; entries off the leaf's path are dimmed. Labels are shown as `[label]`.
 * Contract: iterative along chains (deep conversations do not recurse), pure.
 */
export function drawTree(tree: TreeInput, style: Style): string[] {
  const byId = new Map(tree.entries.map((e) => [e.id, e] as const));
  const children = new Map<string, string[]>();
  const roots: string[] = [];
  for (const entry of tree.entries) {
    const parent = entry.parentId;
    if (parent === null || parent === entry.id || !byId.has(parent)) {
      roots.push(entry.id);
      continue;
    }
    const list = children.get(parent);
    if (list) list.push(entry.id);
    else children.set(parent, [entry.id]);
  }
  const onPath = new Set<string>();
  for (let id = tree.leafId; id !== null && !onPath.has(id); ) {
    const entry = byId.get(id);
    if (!entry) break;
    onPath.add(id);
    id = entry.parentId;
  }
  const lines: string[] = [];
  const describe = (entry: SessionEntry) => {
    const label = tree.labels?.[entry.id];
    const text = `${shortId(entry.id)} ${summarizeEntry(entry)}${label ? ` [${label}]` : ""}`;
    if (entry.id === tree.leafId) return `${style.bold(text)} ${style.green("◀ leaf")}`;
    return onPath.has(entry.id) ? text : style.dim(text);
  };
  const stack: { id: string; first: string; rest: string }[] = [];
  for (let i = roots.length - 1; i >= 0; i--) stack.push({ id: roots[i] as string, first: "", rest: "" });
  const seen = new Set<string>();
  while (stack.length > 0) {
    const { id, first, rest } = stack.pop() as { id: string; first: string; rest: string };
    let current: string | undefined = id;
    let prefix = first;
    while (current !== undefined && !seen.has(current)) {
      seen.add(current);
      const entry = byId.get(current) as SessionEntry;
      lines.push(`${prefix}${style.dim("●")} ${describe(entry)}`);
      prefix = rest;
      const kids: string[] = children.get(current) ?? [];
      if (kids.length === 1) {
        current = kids[0];
        continue;
      }
      for (let k = kids.length - 1; k >= 0; k--) {
        const last = k === kids.length - 1;
        stack.push({
          id: kids[k] as string,
          first: `${rest}${last ? "└─" : "├─"}`,
          rest: `${rest}${last ? "  " : "│ "}`,
        });
      }
      current = undefined;
    }
  }
  if (tree.leafId === null && tree.entries.length > 0) lines.push(style.green("◀ leaf (before the first entry)"));
  return lines;
}

/**
 * Resolves what a person typed as an entry id: the full id, or a unique suffix or prefix of one
 * (the tree shows the last 8 characters). Returns an error message when none or several match.
 */
export function resolveEntryRef(
  entries: readonly SessionEntry[],
  ref: string,
): { ok: true; id: string } | { ok: false; error: string } {
  const exact = entries.find((e) => e.id === ref);
  if (exact) return { ok: true, id: exact.id };
  const matches = entries.filter((e) => e.id.endsWith(ref) || e.id.startsWith(ref));
  if (matches.length === 1) return { ok: true, id: (matches[0] as SessionEntry).id };
  if (matches.length === 0) return { ok: false, error: `no entry matches ${JSON.stringify(ref)}` };
  return { ok: false, error: `${JSON.stringify(ref)} matches ${matches.length} entries; use more characters` };
}
