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
