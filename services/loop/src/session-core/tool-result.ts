// A tool call's result as the session records it: its `tool_execution_end` and its toolResult
// message (pi's shapes). Pure; shared by the engine's tool batch (`../engine/execute-tool-batch.ts`)
// and the runtime core (`../decide/decide-input.ts`).
import type { EventDraft, ImageContent, TextContent, ToolResultMessage } from "@fleet/protocol";

/** A call's outcome: the result the LLM sees (after `afterToolCall`) and whether it is an error. */
export interface ToolExecutionOutcome {
  result: { content: (TextContent | ImageContent)[]; details?: unknown; terminate?: boolean };
  isError: boolean;
}

/** The call a result answers (a tool call block of the assistant message). */
export interface ToolCallRef {
  id: string;
  name: string;
}

/** `tool_execution_end` of a call. */
export function toolExecutionEndBody(call: ToolCallRef, outcome: ToolExecutionOutcome): EventDraft {
  return {
    type: "tool_execution_end",
    toolCallId: call.id,
    toolName: call.name,
    result: outcome.result,
    isError: outcome.isError,
  };
}

/** pi's toolResult message of a call (`details` only when the result has some). */
export function createToolResultMessage(
  toolCallId: string,
  toolName: string,
  outcome: ToolExecutionOutcome,
  timestamp: number,
): ToolResultMessage {
  const message: ToolResultMessage = {
    role: "toolResult",
    toolCallId,
    toolName,
    content: outcome.result.content,
    isError: outcome.isError,
    timestamp,
  };
  if (outcome.result.details !== undefined) message.details = outcome.result.details;
  return message;
}

/** A call's toolResult message as events (pi): `message_start`, then `message_end`. */
export function toolResultMessageDrafts(message: ToolResultMessage): EventDraft[] {
  return [
    { type: "message_start", message },
    { type: "message_end", message },
  ];
}

/**
 * A call's outcome as an input of the runtime core (`decideInput {tool_result}`), after the
 * `afterToolCall` hooks. `mode` is the batch's (config and the tools' `executionMode`).
 */
export interface ToolResultInput {
  kind: "tool_result";
  toolCallId: string;
  outcome: ToolExecutionOutcome;
  mode?: "parallel" | "sequential";
}

/** One call of a batch as known when a result comes in (the engine's batch slots have this shape). */
export interface BatchCall {
  readonly call: ToolCallRef;
  /** Its outcome, once its `tool_execution_end` is out. */
  readonly outcome: ToolExecutionOutcome | undefined;
  /** Its toolResult message, once that is out. */
  readonly message: ToolResultMessage | undefined;
}

const NO_MESSAGES: ToolResultStep["messages"] = Object.freeze([]) as unknown as ToolResultStep["messages"];

/** What a result (or the end of a batch) adds: events to emit in order, and the toolResult messages among them. */
export interface ToolResultStep {
  events: EventDraft[];
  /** The toolResult messages of `events`, with the call each answers. */
  messages: { toolCallId: string; message: ToolResultMessage }[];
}

/**
 * A call's outcome in its batch (pi 0.73), for the live run and the runtime core alike:
 * - sequential (config `toolExecution: "sequential"`, or a call to a tool with `executionMode:
 *   "sequential"`): the call's `tool_execution_end`, then its toolResult message at once, before the
 *   next call starts;
 * - parallel: the call's `tool_execution_end`; when it is the batch's last call without an outcome,
 *   the toolResult messages of every call that has none yet follow, in source order (`batchMessages`).
 * `calls` is the batch before this outcome (`index` the call's place in it); nothing is changed in it.
 */
export function stepToolResult(
  calls: readonly BatchCall[],
  index: number,
  outcome: ToolExecutionOutcome,
  mode: "parallel" | "sequential",
  timestamp: number,
): ToolResultStep {
  const call = (calls[index] as BatchCall).call;
  const end = toolExecutionEndBody(call, outcome);
  if (mode === "sequential") {
    const message = createToolResultMessage(call.id, call.name, outcome, timestamp);
    return { events: [end, ...toolResultMessageDrafts(message)], messages: [{ toolCallId: call.id, message }] };
  }
  for (let i = 0; i < calls.length; i++) {
    if (i !== index && (calls[i] as BatchCall).outcome === undefined) return { events: [end], messages: NO_MESSAGES };
  }
  const rest = batchMessages(calls, timestamp, index, outcome);
  rest.events.unshift(end);
  return rest;
}

/**
 * The toolResult messages of a batch whose calls all have outcomes, for each call without one yet,
 * in source order (`override`: the outcome of call `index`, not yet in `calls`). Also what a resumed
 * batch that ended every call before an interruption still owes.
 */
export function batchMessages(
  calls: readonly BatchCall[],
  timestamp: number,
  index = -1,
  override?: ToolExecutionOutcome,
): ToolResultStep {
  const step: ToolResultStep = { events: [], messages: [] };
  for (let i = 0; i < calls.length; i++) {
    const c = calls[i] as BatchCall;
    const outcome = i === index ? override : c.outcome;
    if (c.message || !outcome) continue;
    const message = createToolResultMessage(c.call.id, c.call.name, outcome, timestamp);
    step.events.push({ type: "message_start", message }, { type: "message_end", message });
    step.messages.push({ toolCallId: c.call.id, message });
  }
  return step;
}
