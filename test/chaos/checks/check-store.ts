// Invariant 4: the session store's get_context and get_tree equal a fresh fold of the session's log.
import { buildContext, foldSessionTreeEvents, getTree } from "@fleet/protocol";
import type { SessionLog, StoreAnswer, Violation } from "./types.js";

export function checkStore(log: SessionLog, answer: StoreAnswer): Violation[] {
  const out: Violation[] = [];
  const v = (kind: string, detail: string) => out.push({ invariant: "store", sessionId: log.sessionId, kind, detail });
  if (answer.error !== undefined) {
    v("store_unanswered", answer.error);
    return out;
  }
  const tree = foldSessionTreeEvents(log.events);
  const context = buildContext(tree);
  const view = getTree(tree);
  const expectedContext = context.ok ? { ...context, ok: undefined } : context;
  const gotContext = { ...(answer.context as object), seq: undefined };
  const diffContext = firstDifference(strip(expectedContext), strip(gotContext));
  if (diffContext) v("context_differs", `get_context ${diffContext}`);
  const expectedTree = { entries: view.entries, leafId: view.leafId, labels: view.labels };
  const got = answer.tree as { entries?: unknown; leafId?: unknown; labels?: unknown } | undefined;
  const gotTree = { entries: got?.entries, leafId: got?.leafId, labels: got?.labels ?? {} };
  const diffTree = firstDifference(strip(expectedTree), strip(gotTree));
  if (diffTree) v("tree_differs", `get_tree ${diffTree}`);
  return out;
}

/** JSON form without undefined fields and `ok`. */
function strip(value: unknown): unknown {
  const json = JSON.parse(JSON.stringify(value ?? null)) as Record<string, unknown>;
  if (json && typeof json === "object") delete json.ok;
  return json;
}

/** Where two JSON values first differ (`undefined` when equal; object key order is ignored). */
export function firstDifference(expected: unknown, got: unknown, path = "$"): string | undefined {
  if (Array.isArray(expected) || Array.isArray(got)) {
    if (!Array.isArray(expected) || !Array.isArray(got)) return `${path}: array vs ${typeof got}`;
    if (expected.length !== got.length) return `${path}: ${got.length} items, the log has ${expected.length}`;
    for (let i = 0; i < expected.length; i++) {
      const d = firstDifference(expected[i], got[i], `${path}[${i}]`);
      if (d) return d;
    }
    return undefined;
  }
  if (expected && got && typeof expected === "object" && typeof got === "object") {
    const keys = new Set([...Object.keys(expected), ...Object.keys(got)]);
    for (const key of keys) {
      const d = firstDifference(
        (expected as Record<string, unknown>)[key],
        (got as Record<string, unknown>)[key],
        `${path}.${key}`,
      );
      if (d) return d;
    }
    return undefined;
  }
  return expected === got ? undefined : `${path}: ${JSON.stringify(got)}, the log gives ${JSON.stringify(expected)}`;
}
