// Sub-agents in the decider (PROTOCOL "Sub-agents", change 57): a child's creation names its parent;
// an `agent` call of a parent's run becomes the child's commands, or an error result when it breaks
// a limit; the parent's abort becomes each child's command under its close policy. Pure.
import {
  AGENT_TOOL_NAME,
  AgentToolArgs,
  CHILD_CANCEL_TEXT,
  type ChildClosePolicy,
  type CommandOf,
  childCommandIds,
  childSessionId,
  type FleetCommand,
  type ParentLink,
  type RunCursor,
  type SessionState,
} from "@fleet/protocol";
import type { DraftEvent } from "../session-core/drafts.js";
import type { Decision } from "./decision.js";

export const CHILD_TEXT = {
  withFork: "`parent` and `forkFrom` do not combine: a child session starts empty",
  badArgs: (why: string) => `Invalid arguments for agent: ${why}`,
  tooDeep: (max: number) =>
    `Sub-agent refused: it would be deeper than ${max} levels of sessions (FLEET_SUBAGENT_MAX_DEPTH)`,
  tooMany: (max: number) =>
    `Sub-agent refused: at most ${max} agent calls run in parallel from one message (FLEET_SUBAGENT_MAX_FANOUT)`,
  noAgent: (ref: string) => `Sub-agent refused: agent ${ref} not found`,
  closedFirst: "The parent closed this child before it was created",
} as const;

/** `create_session {parent}` decided as without it, then `parent` added to its `session_created`. */
export function withParent(decision: Decision, parent: ParentLink): Decision {
  if (decision.kind !== "decided") return decision;
  return {
    ...decision,
    events: decision.events.map((d) =>
      d.body.type === "session_created" ? { ...d, body: { ...d.body, parent: { ...parent } } } : d,
    ),
  };
}

export interface SubAgentLimits {
  /** Deepest child allowed: 1 lets a root session start children, no grandchildren. */
  maxDepth: number;
  /** Most `agent` calls started from one assistant message. */
  maxFanOut: number;
  /** What the parent's abort does to the children started under these limits. */
  closePolicy: ChildClosePolicy;
}

export interface ChildCallInput {
  parentSessionId: string;
  /** The parent's own link (`SessionState.parent`): its depth is the child's minus one. */
  parentLink: ParentLink | null;
  runId: string;
  toolCallId: string;
  args: unknown;
  /** The call's place among the `agent` calls of its assistant message, from 0. */
  ordinal: number;
  limits: SubAgentLimits;
}

export type ChildCallDecision =
  | { kind: "refuse"; text: string }
  /** Publish `commands` in order (ids derived from the child): a second publish is deduplicated. */
  | { kind: "start"; childId: string; link: ParentLink; commands: FleetCommand[] };

/**
 * An `agent` call: its child's `create_session {agent?, parent}` then `prompt`, both with ids derived
 * from the child's id, which derives from the parent's session and call: whoever decides the call
 * again (a new owner resuming the run) starts the same child, once. Refused: arguments that do not
 * parse, a child deeper than `maxDepth`, a call past `maxFanOut` in its message.
 */
export function decideChildCall(input: ChildCallInput): ChildCallDecision {
  const parsed = AgentToolArgs.safeParse(input.args);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { kind: "refuse", text: CHILD_TEXT.badArgs(`${issue?.path.join(".") || "arguments"}: ${issue?.message}`) };
  }
  const depth = (input.parentLink?.depth ?? 0) + 1;
  if (depth > input.limits.maxDepth) return { kind: "refuse", text: CHILD_TEXT.tooDeep(input.limits.maxDepth) };
  if (input.ordinal >= input.limits.maxFanOut)
    return { kind: "refuse", text: CHILD_TEXT.tooMany(input.limits.maxFanOut) };
  const childId = childSessionId(input.parentSessionId, input.toolCallId);
  const ids = childCommandIds(childId);
  const link: ParentLink = {
    sessionId: input.parentSessionId,
    runId: input.runId,
    toolCallId: input.toolCallId,
    depth,
    closePolicy: input.limits.closePolicy,
  };
  const { agent, prompt } = parsed.data;
  const create: CommandOf<"create_session"> = {
    type: "create_session",
    id: ids.create,
    sessionId: childId,
    parent: link,
    ...(agent !== undefined ? { agent } : {}),
  };
  const run: CommandOf<"prompt"> = { type: "prompt", id: ids.prompt, sessionId: childId, text: prompt };
  return { kind: "start", childId, link, commands: [create, run] };
}

/**
 * What the parent's abort sends a child under its close policy: `terminate` an `abort`,
 * `request_cancel` a `steer` asking it to wrap up, `abandon` nothing. The ids derive from the child.
 */
export function decideChildClose(childId: string, policy: ChildClosePolicy): FleetCommand | undefined {
  const ids = childCommandIds(childId);
  switch (policy) {
    case "terminate":
      return { type: "abort", id: ids.abort, sessionId: childId };
    case "request_cancel":
      return { type: "steer", id: ids.cancel, sessionId: childId, text: CHILD_CANCEL_TEXT };
    case "abandon":
      return undefined;
  }
}

/**
 * The `agent` calls an accepted `abort` left running, by call id: started, not ended, in a run whose
 * cursor holds the abort. A new owner resuming such a run closes their children (the worker that
 * accepted the abort may have died before it did); the commands' ids make a second close a no-op.
 */
export function childrenToClose(cursor: RunCursor): string[] {
  if (cursor.kind !== "tools_pending" || !cursor.abortRequested) return [];
  const pending = new Set(cursor.pendingToolCallIds);
  const started = new Set(cursor.startedToolCallIds);
  return cursor.toolCalls
    .filter((c) => c.name === AGENT_TOOL_NAME && pending.has(c.id) && started.has(c.id))
    .map((c) => c.id);
}

/** The reason a child's decided events refuse its parent's prompt (`sub.<childId>.prompt`), if they do. */
export function childPromptRefusal(childId: string, events: readonly DraftEvent[]): string | undefined {
  const prompt = childCommandIds(childId).prompt;
  for (const { body } of events) {
    if (body.type === "command_rejected" && body.commandId === prompt) return `${body.code}: ${body.reason}`;
  }
  return undefined;
}

/**
 * A child's own create or prompt (`sub.<child>.create|prompt`) that comes after its parent's close
 * (`sub.<child>.abort|cancel`, accepted or rejected): a deposed parent owner's late publish.
 */
export function closedChild(state: SessionState, sessionId: string, commandId: string): boolean {
  const ids = childCommandIds(sessionId);
  if (commandId !== ids.create && commandId !== ids.prompt) return false;
  return state.commands.has(ids.abort) || state.commands.has(ids.cancel);
}
