// pi's Agent state (pi-semantics §3) as a pure fold over Fleet events.
import type { ModelRef, QueueMode, ToolExecutionMode } from "../config.js";
import type { FleetEvent } from "../events.js";
import type { AgentMessage, ContextMessage, ThinkingLevel } from "../messages.js";
import { applyDeltas } from "./apply-deltas.js";
import type { MessageQueues } from "./message-queues.js";

/**
 * What pi's `Agent.state` holds apart from the transcript, plus the session settings and queues
 * Fleet records as events. Immutable: `foldAgentStatus` returns a new object when anything changes,
 * and never modifies the old one.
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

/**
 * `foldAgentState` without the transcript: a `message_end` only clears `streamingMessage`. Keeps
 * every other field of `state` (so it also folds an `AgentState`, leaving its `messages` alone).
 * Contract: never throws; events that do not touch the status return `state` itself.
 */
export function foldAgentStatus<S extends AgentStatus>(state: S, event: FleetEvent): S {
  switch (event.type) {
    case "agent_start":
      return {
        ...state,
        isStreaming: true,
        streamingMessage: undefined,
        errorMessage: undefined,
        runId: event.meta.runId ?? event.meta.id,
      };
    case "message_start":
      return { ...state, streamingMessage: event.message };
    case "message_update": {
      const current = state.streamingMessage;
      if (current?.role !== "assistant") return state;
      return { ...state, streamingMessage: applyDeltas(current, event.deltas) };
    }
    case "message_end":
      return state.streamingMessage === undefined ? state : { ...state, streamingMessage: undefined };
    case "tool_execution_start": {
      const pendingToolCalls = new Set(state.pendingToolCalls);
      pendingToolCalls.add(event.toolCallId);
      return { ...state, pendingToolCalls };
    }
    case "tool_execution_end": {
      const pendingToolCalls = new Set(state.pendingToolCalls);
      pendingToolCalls.delete(event.toolCallId);
      return { ...state, pendingToolCalls };
    }
    case "turn_end":
      return event.message.errorMessage ? { ...state, errorMessage: event.message.errorMessage } : state;
    case "agent_end":
      return {
        ...state,
        isStreaming: false,
        streamingMessage: undefined,
        pendingToolCalls: new Set(),
        runId: undefined,
      };
    case "session_created": {
      const c = event.config;
      return {
        ...state,
        systemPrompt: c.systemPrompt,
        model: c.model,
        thinkingLevel: c.thinkingLevel,
        activeTools: c.activeTools,
        steeringMode: c.steeringMode,
        followUpMode: c.followUpMode,
        toolExecution: c.toolExecution,
      };
    }
    case "model_change":
      return { ...state, model: { provider: event.provider, modelId: event.modelId } };
    case "thinking_level_change":
      return { ...state, thinkingLevel: event.thinkingLevel };
    case "active_tools_change":
      return { ...state, activeTools: event.toolNames };
    case "config_change":
      return {
        ...state,
        ...(event.systemPrompt !== undefined ? { systemPrompt: event.systemPrompt } : {}),
        ...(event.steeringMode !== undefined ? { steeringMode: event.steeringMode } : {}),
        ...(event.followUpMode !== undefined ? { followUpMode: event.followUpMode } : {}),
        ...(event.toolExecution !== undefined ? { toolExecution: event.toolExecution } : {}),
      };
    case "queue_update":
      return { ...state, queues: { steer: event.steer, followUp: event.followUp, nextTurn: event.nextTurn } };
    default:
      return state;
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
