// The child sessions of a session (sub-agents, PROTOCOL "Sub-agents", change 57): derived from the
// parent's transcript (its `agent` calls name their children's ids) and each child's own log, so any
// reader of the logs (the SDK, the CLI, the gateway) gets the same tree.
import { childCallsOf, type PendingApproval, type Spend } from "@fleet/protocol";
import type { ReplayResult } from "./read-options.js";

/** One child session as it stands now, with its own children when asked for. */
export interface SessionChild {
  sessionId: string;
  /** The parent's `agent` call that started it. */
  toolCallId: string;
  /** The agent reference the call named; absent: the default settings. */
  agent?: string;
  description?: string;
  /** `pending`: its log is still empty (not created yet, or the call was never started). */
  status: "pending" | "running" | "idle";
  seq: number;
  /** What the child's own LLM calls (and its children's, once they answered) spent. */
  spend: Spend;
  /** Its own children (`depth` > 1). */
  children?: SessionChild[];
}

/**
 * The children of `sessionId`, `depth` levels deep (default 1), read with `load` (a replay of a
 * session's log, or a cached view of it). Children are listed in call order.
 */
export async function sessionChildren(
  load: (sessionId: string) => Promise<ReplayResult>,
  sessionId: string,
  depth = 1,
  parentView?: ReplayResult,
): Promise<SessionChild[]> {
  const view = parentView ?? (await load(sessionId));
  const calls = childCallsOf(view.tree.entries, sessionId);
  return Promise.all(
    calls.map(async (call): Promise<SessionChild> => {
      const child = await load(call.childSessionId);
      const created = child.seq > 0 && child.tree.sessionId !== null;
      const out: SessionChild = {
        sessionId: call.childSessionId,
        toolCallId: call.toolCallId,
        ...(call.agent !== undefined ? { agent: call.agent } : {}),
        ...(call.description !== undefined ? { description: call.description } : {}),
        status: !created ? "pending" : child.agent.isStreaming ? "running" : "idle",
        seq: child.seq,
        spend: { ...child.spend.session },
      };
      if (created && depth > 1) out.children = await sessionChildren(load, call.childSessionId, depth - 1, child);
      return out;
    }),
  );
}

/** How deep descendants are looked for (the loop's depth limit is at most this in practice). */
export const MAX_DESCENDANT_DEPTH = 10;

/** Every descendant's session id (children, then theirs), skipping children not created yet. */
export async function descendantIds(
  load: (sessionId: string) => Promise<ReplayResult>,
  sessionId: string,
  parentView?: ReplayResult,
): Promise<string[]> {
  const out: string[] = [];
  const walk = (children: readonly SessionChild[]) => {
    for (const child of children) {
      if (child.status === "pending") continue;
      out.push(child.sessionId);
      if (child.children) walk(child.children);
    }
  };
  walk(await sessionChildren(load, sessionId, MAX_DESCENDANT_DEPTH, parentView));
  return out;
}

/**
 * The pending approvals of a session and of its descendants (an approval asked inside a child is
 * answered on the child: each item names its own `sessionId`), oldest first.
 */
export async function approvalsWithDescendants(
  list: (sessionId: string) => Promise<PendingApproval[]>,
  load: (sessionId: string) => Promise<ReplayResult>,
  sessionId: string,
): Promise<PendingApproval[]> {
  const ids = [sessionId, ...(await descendantIds(load, sessionId))];
  const all = (await Promise.all(ids.map(list))).flat();
  return all.sort((a, b) => a.requestedAt - b.requestedAt || a.seq - b.seq);
}
