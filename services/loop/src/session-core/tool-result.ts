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
 * Sequential tool mode (pi: config `toolExecution: "sequential"`, or a call to a tool with
 * `executionMode: "sequential"`): a call's outcome closes it at once, before the next call starts:
 * its `tool_execution_end`, then its toolResult message's `message_start` / `message_end`.
 */
export function sequentialToolResult(
  call: ToolCallRef,
  outcome: ToolExecutionOutcome,
  timestamp: number,
): { events: EventDraft[]; message: ToolResultMessage } {
  const message = createToolResultMessage(call.id, call.name, outcome, timestamp);
  return { events: [toolExecutionEndBody(call, outcome), ...toolResultMessageDrafts(message)], message };
}
