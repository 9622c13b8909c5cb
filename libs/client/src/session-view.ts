// The client's view of one session: agent state and session tree folded together (pure).
import {
  type AgentState,
  buildContext,
  emptySessionTree,
  type FleetEvent,
  foldAgentEvents,
  foldAgentState,
  foldSessionTree,
  foldSessionTreeInPlace,
  initialAgentState,
  type SessionTree,
  withMessages,
} from "@fleet/protocol";

/**
 * What `state()` and `replay()` hold for a session at stream sequence `seq` (0 = before any event).
 * Immutable: `foldSessionView` returns a new object when anything changes.
 */
export interface SessionView {
  seq: number;
  agent: AgentState;
  tree: SessionTree;
}

export function emptySessionView(): SessionView {
  return { seq: 0, agent: initialAgentState(), tree: emptySessionTree() };
}

/** Events after which pi replaces the transcript with the context built from the tree. */
const RESETS_TRANSCRIPT = new Set<FleetEvent["type"]>(["compaction", "leaf", "branch_summary"]);

/**
 * Applies one event at stream sequence `seq` with the protocol's reducers. After a compaction, a
 * branch summary or a leaf move the transcript becomes the built context of the tree (pi's
 * `state.messages = buildSessionContext().messages`). Contract: never throws.
 */
export function foldSessionView(view: SessionView, seq: number, event: FleetEvent): SessionView {
  const tree = foldSessionTree(view.tree, event);
  let agent = foldAgentState(view.agent, event);
  if (RESETS_TRANSCRIPT.has(event.type) && tree !== view.tree) {
    const context = buildContext(tree);
    if (context.ok) agent = withMessages(agent, context.messages);
  }
  return { seq, agent, tree };
}

/**
 * Folds many events at once; same result as `foldSessionView` in a loop, in linear time: the tree
 * is copied at its first change and then folded in place, and the transcript is appended to in
 * place (`foldAgentEvents`). The views in between are never made.
 */
export function foldSessionViewEvents(
  view: SessionView,
  records: Iterable<{ seq: number; event: FleetEvent }>,
): SessionView {
  let { seq, agent, tree } = view;
  let ownsTree = false;
  let pending: FleetEvent[] = [];
  for (const record of records) {
    seq = record.seq;
    const event = record.event;
    let changed: boolean;
    if (ownsTree) changed = foldSessionTreeInPlace(tree, event);
    else {
      const next = foldSessionTree(tree, event);
      changed = next !== tree;
      ownsTree = changed;
      tree = next;
    }
    pending.push(event);
    if (RESETS_TRANSCRIPT.has(event.type) && changed) {
      agent = foldAgentEvents(pending, agent);
      pending = [];
      const context = buildContext(tree);
      if (context.ok) agent = withMessages(agent, context.messages);
    }
  }
  agent = foldAgentEvents(pending, agent);
  return { seq, agent, tree };
}
