// pi's Agent state (pi-semantics §3) as a pure fold over Fleet events.
import type { ModelRef, QueueMode, ToolExecutionMode } from "../config.js";
import type { FleetEvent } from "../events.js";
import type { AgentMessage, ContextMessage, ThinkingLevel } from "../messages.js";
import { applyDeltas } from "./apply-deltas.js";
import type { MessageQueues } from "./message-queues.js";

/**
 * What pi's `Agent.state` holds apart from the transcript, plus the session settings and queues
 * Fleet records as events. `foldAgentStatus` returns a new object when anything changes and never
 * modifies the old one; the session's fold updates its own status in place (`applyAgentStatus`).
 */
export interface AgentStatus {
  /** From `session_created.config`; `""` before it. */
  systemPrompt: string;
  /** From the config, then `model_change`; `null` before `session_created`. */
  model: ModelRef | null;
  thinkingLevel: ThinkingLevel;
  /** Active tool names; `null` = every registered tool. From the config, then `active_tools_change`. */
  activeTools: readonly string[] | null;
  steeringMode: QueueMode;
  followUpMode: QueueMode;
  toolExecution: ToolExecutionMode;
  /** `true` from `agent_start` until `agent_end`. */
  isStreaming: boolean;
  /**
   * The message between its `message_start` and `message_end`, for every role; for an assistant
   * message, rebuilt from its `message_update` deltas. Cleared by `message_end` and `agent_end`.
   */
  streamingMessage: AgentMessage | undefined;
  /** Tool calls between `tool_execution_start` and `_end`: a new Set object on every change. */
  pendingToolCalls: ReadonlySet<string>;
  /** The last `turn_end` assistant's `errorMessage` in this run; cleared by `agent_start`. */
  errorMessage: string | undefined;
  /** As the last `queue_update` reported them (messages polled but not yet injected still count). */
  queues: MessageQueues;
  /** `meta.runId` of the run in progress (from `agent_start`); `undefined` when idle. */
  runId: string | undefined;
}

/** `AgentStatus` plus pi's transcript. */
export interface AgentState extends AgentStatus {
  /**
   * The transcript: grows by one message on every `message_end` and on nothing else in this fold.
   * Typed as context messages because, as in pi, `withMessages` may put summary messages in it.
   */
  messages: readonly ContextMessage[];
}

/** pi's Agent defaults: empty prompt, thinking off, one-at-a-time queues, parallel tools. */
export function initialAgentStatus(): AgentStatus {
  return {
    systemPrompt: "",
    model: null,
    thinkingLevel: "off",
    activeTools: null,
    steeringMode: "one-at-a-time",
    followUpMode: "one-at-a-time",
    toolExecution: "parallel",
    isStreaming: false,
    streamingMessage: undefined,
    pendingToolCalls: new Set(),
    errorMessage: undefined,
    queues: { steer: [], followUp: [], nextTurn: [] },
    runId: undefined,
  };
}

export function initialAgentState(): AgentState {
  return { ...initialAgentStatus(), messages: [] };
}

/**
 * Applies one event (pi's `Agent.processEvents` plus `finishRun` at `agent_end`).
 * Events that do not touch the state return `state` itself. Contract: never throws; a
 * `message_update` with no streaming assistant message is ignored.
 *
 * Not covered: pi replaces `state.messages` with the built context after a compaction or a tree
 * navigation. This fold does not see the tree; after `compaction` or `leaf` events use
 * `withMessages(state, buildContext(tree).messages)`.
 */
export function foldAgentState(state: AgentState, event: FleetEvent): AgentState {
  if (event.type === "message_end") return endMessage(state, [...state.messages, event.message]);
  return foldAgentStatus(state, event);
}

/** The event types `applyAgentStatus` (and so `foldAgentStatus`) may change a status for; others leave it as it is. */
export const AGENT_STATUS_EVENT_TYPES: ReadonlySet<FleetEvent["type"]> = new Set<FleetEvent["type"]>([
  "agent_start",
  "message_start",
  "message_update",
  "message_end",
  "tool_execution_start",
  "tool_execution_end",
  "turn_end",
  "agent_end",
  "session_created",
  "model_change",
  "thinking_level_change",
  "active_tools_change",
  "config_change",
  "agent_change",
  "queue_update",
]);

/**
 * `foldAgentState` without the transcript: a `message_end` only clears `streamingMessage`. Keeps
 * every other field of `state` (so it also folds an `AgentState`, leaving its `messages` alone).
 * Contract: never throws; `state` is not modified; events that do not touch the status return
 * `state` itself (a changing event costs one shallow copy).
 */
export function foldAgentStatus<S extends AgentStatus>(state: S, event: FleetEvent): S {
  if (!AGENT_STATUS_EVENT_TYPES.has(event.type)) return state;
  const next = { ...state };
  return applyAgentStatus(next, event) ? next : state;
}

/**
 * Applies one event to `status` itself, with `foldAgentStatus`'s rules; returns whether it changed.
 * Fields are replaced, never modified in place (`pendingToolCalls` is a new Set on every change, as
 * in pi), so a copy of the status object shares nothing that a later event changes. For a single
 * owner (the session's fold): O(1) per event except `message_update` (see `applyDeltas`).
 */
export function applyAgentStatus(status: AgentStatus, event: FleetEvent): boolean {
  switch (event.type) {
    case "agent_start":
      status.isStreaming = true;
      status.streamingMessage = undefined;
      status.errorMessage = undefined;
      status.runId = event.meta.runId ?? event.meta.id;
      return true;
    case "message_start":
      status.streamingMessage = event.message;
      return true;
    case "message_update": {
      const current = status.streamingMessage;
      if (current?.role !== "assistant") return false;
      status.streamingMessage = applyDeltas(current, event.deltas);
      return true;
    }
    case "message_end":
      if (status.streamingMessage === undefined) return false;
      status.streamingMessage = undefined;
      return true;
    case "tool_execution_start": {
      const pendingToolCalls = new Set(status.pendingToolCalls);
      pendingToolCalls.add(event.toolCallId);
      status.pendingToolCalls = pendingToolCalls;
      return true;
    }
    case "tool_execution_end": {
      const pendingToolCalls = new Set(status.pendingToolCalls);
      pendingToolCalls.delete(event.toolCallId);
      status.pendingToolCalls = pendingToolCalls;
      return true;
    }
    case "turn_end":
      if (!event.message.errorMessage) return false;
      status.errorMessage = event.message.errorMessage;
      return true;
    case "agent_end":
      status.isStreaming = false;
      status.streamingMessage = undefined;
      status.pendingToolCalls = new Set();
      status.runId = undefined;
      return true;
    case "session_created": {
      const c = event.config;
      status.systemPrompt = c.systemPrompt;
      status.model = c.model;
      status.thinkingLevel = c.thinkingLevel;
      status.activeTools = c.activeTools;
      status.steeringMode = c.steeringMode;
      status.followUpMode = c.followUpMode;
      status.toolExecution = c.toolExecution;
      return true;
    }
    case "model_change":
      status.model = { provider: event.provider, modelId: event.modelId };
      return true;
    case "thinking_level_change":
      status.thinkingLevel = event.thinkingLevel;
      return true;
    case "active_tools_change":
      status.activeTools = event.toolNames;
      return true;
    case "agent_change":
      if (event.systemPrompt === undefined) return false;
      status.systemPrompt = event.systemPrompt;
      return true;
    case "config_change":
      if (event.systemPrompt !== undefined) status.systemPrompt = event.systemPrompt;
      if (event.steeringMode !== undefined) status.steeringMode = event.steeringMode;
      if (event.followUpMode !== undefined) status.followUpMode = event.followUpMode;
      if (event.toolExecution !== undefined) status.toolExecution = event.toolExecution;
      return true;
    case "queue_update":
      status.queues = { steer: event.steer, followUp: event.followUp, nextTurn: event.nextTurn };
      return true;
    default:
      return false;
  }
}

const endMessage = (state: AgentState, messages: readonly ContextMessage[]): AgentState => ({
  ...state,
  streamingMessage: undefined,
  messages,
});

/**
 * Folds events in order from `state` (default: `initialAgentState()`); same result as
 * `foldAgentState` in a loop. The transcript is copied once and then appended to in place, so a long
 * log folds in linear time (the states in between are never handed out).
 */
export function foldAgentEvents(events: Iterable<FleetEvent>, state: AgentState = initialAgentState()): AgentState {
  let current = state;
  let owned: ContextMessage[] | undefined;
  for (const event of events) {
    if (event.type !== "message_end") {
      current = foldAgentState(current, event);
      continue;
    }
    if (current.messages !== owned) owned = current.messages.slice();
    owned.push(event.message);
    current = endMessage(current, owned);
  }
  return current;
}

/** Replaces the transcript, as pi does after compaction or navigation (`state.messages = context.messages`). */
export function withMessages(state: AgentState, messages: readonly ContextMessage[]): AgentState {
  return { ...state, messages };
}
