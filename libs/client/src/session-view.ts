// The client's view of one session: agent state and session tree folded together (pure).
import {
  type AgentState,
  buildContext,
  emptySessionTree,
  type FleetEvent,
  foldAgentState,
  foldSessionTree,
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
