import { existsSync } from "node:fs";
import { ensureWorkspace } from "../workspace-path.js";

/** Cached workspaces above which the cache starts afresh. */
const MAX_CACHED = 10_000;

/**
 * A session's workspace directory (`<root>/<sessionId>`, or `root` in `shared` mode), created on
 * first use; later calls only check that it still exists. Rejects when it cannot be created.
 */
export function createCallWorkspaces(
  root: string,
  mode: "per-session" | "shared",
): (sessionId: string) => Promise<string> {
  const workspaces = new Map<string, string>();
  return async function workspaceOf(sessionId) {
    const cached = workspaces.get(sessionId);
    if (cached !== undefined && existsSync(cached)) return cached;
    const dir = await ensureWorkspace(root, sessionId, mode);
    if (workspaces.size >= MAX_CACHED) workspaces.clear();
    workspaces.set(sessionId, dir);
    return dir;
  };
}
