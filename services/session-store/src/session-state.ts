import {
  applySettingsEntry,
  buildContext,
  type ContextDefaults,
  contextDefaults,
  emptySessionTree,
  type FleetEvent,
  foldPendingApprovals,
  foldSessionTreeEvents,
  type ModelRef,
  type PendingApprovals,
  type SessionEntry,
  type SessionTree,
  type ThinkingLevel,
} from "@fleet/protocol";

export type SessionStatus = "idle" | "running";

/**
 * Everything the store keeps of one session: the protocol reducer's tree plus the bookkeeping of the
 * projection. Pure data; `projectEvents` never mutates its input.
 */
export interface ProjectedSession {
  sessionId: string;
  /** Exactly `foldSessionTreeEvents` of the session's decodable events, in stream order. */
  tree: SessionTree;
  /** Stream sequence of the last event applied (0 = none). The per-session guard. */
  lastSeq: number;
  /** `meta.ts` of the first decodable event (normally `session_created`); 0 before it. */
  createdAt: number;
  /** `meta.ts` of the last decodable event applied. */
  updatedAt: number;
  /** `running` from `agent_start` until `agent_end` (the agent state's `isStreaming`). */
  status: SessionStatus;
  /** Settings at the leaf, as `buildContext` derives them (session config defaults otherwise). */
  model: ModelRef | null;
  thinkingLevel: ThinkingLevel;
  activeToolNames: string[] | null;
  /** Pending tool approvals by tool call id: `foldPendingApprovals` of the session's events. */
  approvals: PendingApprovals;
}

const NO_APPROVALS: PendingApprovals = new Map();

/** One message of `FLEET_EVENTS` for a session; `event: null` when it could not be decoded. */
export interface StreamEvent {
  seq: number;
  event: FleetEvent | null;
}

export function emptyProjectedSession(sessionId: string): ProjectedSession {
  return {
    sessionId,
    tree: emptySessionTree(),
    lastSeq: 0,
    createdAt: 0,
    updatedAt: 0,
    status: "idle",
    model: null,
    thinkingLevel: "off",
    activeToolNames: null,
    approvals: NO_APPROVALS,
  };
}

/**
 * Applies events in stream order. Events at or below `state.lastSeq` are skipped (a redelivery is a
 * no-op); an undecodable event only advances `lastSeq`. The tree is folded by the protocol reducer,
 * which itself ignores duplicated entries and leaf events. Returns `state` when nothing is newer.
 */
export function projectEvents(state: ProjectedSession, events: readonly StreamEvent[]): ProjectedSession {
  const fresh = events.filter((e) => e.seq > state.lastSeq);
  if (fresh.length === 0) return state;
  const decoded: FleetEvent[] = [];
  let { createdAt, updatedAt, status, approvals } = state;
  for (const { seq, event } of fresh) {
    if (!event) continue;
    decoded.push(event);
    approvals = foldPendingApprovals(approvals, seq, event);
    if (createdAt === 0) createdAt = event.meta.ts;
    updatedAt = event.meta.ts;
    if (event.type === "agent_start") status = "running";
    else if (event.type === "agent_end") status = "idle";
  }
  const tree = foldSessionTreeEvents(decoded, state.tree);
  const settings = tree === state.tree ? state : (settingsAfterAppends(state, tree) ?? settingsAtLeaf(tree));
  return {
    sessionId: state.sessionId,
    tree,
    lastSeq: (fresh.at(-1) as StreamEvent).seq,
    createdAt,
    updatedAt,
    status,
    model: settings.model,
    thinkingLevel: settings.thinkingLevel,
    activeToolNames: settings.activeToolNames,
    approvals,
  };
}

type LeafSettings = Pick<ProjectedSession, "model" | "thinkingLevel" | "activeToolNames">;

/**
 * The leaf's settings without walking the path, when the fold only appended entries along the old
 * leaf (each new entry's parent is the one before it, starting at the old leaf, and the leaf is the
 * last one) under the same config: then the path is the old one plus those entries. Undefined
 * otherwise (a leaf move, a branch off elsewhere, a config change, the first entries).
 */
function settingsAfterAppends(state: ProjectedSession, tree: SessionTree): LeafSettings | undefined {
  const before = state.tree;
  if (tree.config !== before.config || before.config === null) return undefined;
  let parent = before.leafId;
  let settings: ContextDefaults = {
    model: state.model,
    thinkingLevel: state.thinkingLevel,
    activeToolNames: state.activeToolNames,
  };
  for (let i = before.entries.length; i < tree.entries.length; i++) {
    const entry = tree.entries[i] as SessionEntry;
    if (entry.parentId !== parent) return undefined;
    settings = applySettingsEntry(settings, entry);
    parent = entry.id;
  }
  if (tree.leafId !== parent) return undefined;
  return {
    model: settings.model,
    thinkingLevel: settings.thinkingLevel,
    activeToolNames:
      settings.activeToolNames === state.activeToolNames || settings.activeToolNames === null
        ? (settings.activeToolNames as string[] | null)
        : [...settings.activeToolNames],
  };
}

function settingsAtLeaf(tree: SessionTree): LeafSettings {
  const ctx = buildContext(tree);
  if (ctx.ok) return { model: ctx.model, thinkingLevel: ctx.thinkingLevel, activeToolNames: ctx.activeToolNames };
  const defaults = contextDefaults(tree.config);
  return {
    model: defaults.model,
    thinkingLevel: defaults.thinkingLevel,
    activeToolNames: defaults.activeToolNames === null ? null : [...defaults.activeToolNames],
  };
}
