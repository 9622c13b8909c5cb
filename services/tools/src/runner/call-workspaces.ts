import { existsSync } from "node:fs";
import { ensureWorkspace } from "../workspace/workspace-path.js";
import { createWorkspaceQuota, type WorkspaceQuota } from "../workspace/workspace-quota.js";

/** Cached workspaces above which the cache starts afresh. */
const MAX_CACHED = 10_000;

/** A session's workspace: its real path, and its quota when the runner sets one. */
export interface CallWorkspace {
  path: string;
  quota?: WorkspaceQuota;
}

/**
 * A session's workspace directory (`<root>/<sessionId>`, or `root` in `shared` mode), created on
 * first use; later calls only check that it still exists. Calls in one workspace share its quota
 * (`quotaBytes`; 0 = none). Rejects when the directory cannot be created.
 */
export function createCallWorkspaces(
  root: string,
  mode: "per-session" | "shared",
  quotaBytes = 0,
): (sessionId: string) => Promise<CallWorkspace> {
  const workspaces = new Map<string, CallWorkspace>();
  return async function workspaceOf(sessionId) {
    const cached = workspaces.get(sessionId);
    if (cached !== undefined && existsSync(cached.path)) return cached;
    const path = await ensureWorkspace(root, sessionId, mode);
    if (workspaces.size >= MAX_CACHED) workspaces.clear();
    const workspace: CallWorkspace =
      quotaBytes > 0 ? { path, quota: createWorkspaceQuota(path, quotaBytes) } : { path };
    workspaces.set(sessionId, workspace);
    return workspace;
  };
}
