// A session's tree for display: from the session store, or folded from the log when no store runs.
import type { SessionEntry } from "@fleet/protocol";
import { type FleetClient, isFleetError } from "../index.js";
import { CliError } from "./cli-error.js";
import { resolveEntryRef } from "./draw-tree.js";

export interface LoadedTree {
  entries: SessionEntry[];
  leafId: string | null;
  labels: Record<string, string>;
  seq: number;
  source: "store" | "log";
}

export async function loadTree(client: FleetClient, sessionId: string): Promise<LoadedTree> {
  try {
    const reply = await client.getTree(sessionId);
    return {
      entries: reply.entries,
      leafId: reply.leafId,
      labels: reply.labels ?? {},
      seq: reply.seq,
      source: "store",
    };
  } catch (err) {
    if (!isFleetError(err) || err.kind !== "unavailable") throw err;
  }
  const replayed = await client.replay(sessionId);
  return {
    entries: replayed.tree.entries,
    leafId: replayed.tree.leafId,
    labels: { ...replayed.tree.labels },
    seq: replayed.seq,
    source: "log",
  };
}

/** Resolves a typed entry reference against the session's tree, or fails with one line. */
export async function resolveEntry(client: FleetClient, sessionId: string, ref: string): Promise<string> {
  const tree = await loadTree(client, sessionId);
  if (tree.entries.length === 0) throw new CliError(`session ${sessionId} has no entries`);
  const resolved = resolveEntryRef(tree.entries, ref);
  if (!resolved.ok) throw new CliError(`session ${sessionId}: ${resolved.error}`);
  return resolved.id;
}
