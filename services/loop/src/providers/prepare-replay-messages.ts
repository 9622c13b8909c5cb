import type {
  AssistantContentBlock,
  AssistantMessage,
  LlmMessage,
  ModelRef,
  ToolCallContent,
  ToolResultMessage,
} from "@fleet/protocol";

/** Text of the synthetic result of a tool call that never got one (pi-ai, exact). */
export const NO_RESULT_PROVIDED = "No result provided";

/** The `api` field of assistant messages produced by this provider. */
export const ANTHROPIC_API = "anthropic-messages";

/**
 * pi-ai `transformMessages` for a request to `target`:
 * - assistant messages with stopReason `error` or `aborted` are dropped entirely;
 * - a tool call with no `toolResult` before the next assistant or user message (or the end) gets a synthetic
 *   `{isError: true, content: "No result provided"}` result, inserted right before that message
 *   (its timestamp is the assistant message's, so the function stays pure);
 * - a tool result that answers no tool call of the last kept assistant message (its call was in a dropped
 *   message, or a user message came in between), or repeats an earlier result, is dropped, because the API rejects an unmatched tool_result
 *   (Fleet addition; pi-ai keeps it);
 * - assistant messages from another model (provider/api/model differ): thinking becomes plain text
 *   (empty thinking and redacted thinking are dropped), since signatures only verify on the same model.
 */
export function prepareReplayMessages(messages: readonly LlmMessage[], target: ModelRef): LlmMessage[] {
  const result: LlmMessage[] = [];
  let pending: { calls: ToolCallContent[]; answered: Set<string>; timestamp: number } | undefined;

  const flushPending = () => {
    if (!pending) return;
    for (const call of pending.calls) {
      if (pending.answered.has(call.id)) continue;
      const synthetic: ToolResultMessage = {
        role: "toolResult",
        toolCallId: call.id,
        toolName: call.name,
        content: [{ type: "text", text: NO_RESULT_PROVIDED }],
        isError: true,
        timestamp: pending.timestamp,
      };
      result.push(synthetic);
    }
    pending = undefined;
  };

  for (const message of messages) {
    if (message.role === "assistant") {
      flushPending();
      if (message.stopReason === "error" || message.stopReason === "aborted") continue;
      const replayed = isSameModel(message, target) ? message : downgradeForeignAssistant(message);
      const calls = replayed.content.filter((block): block is ToolCallContent => block.type === "toolCall");
      if (calls.length > 0) pending = { calls, answered: new Set(), timestamp: message.timestamp };
      result.push(replayed);
    } else if (message.role === "toolResult") {
      const answersPendingCall = pending?.calls.some((call) => call.id === message.toolCallId) ?? false;
      if (!pending || !answersPendingCall || pending.answered.has(message.toolCallId)) continue;
      pending.answered.add(message.toolCallId);
      result.push(message);
    } else {
      flushPending();
      result.push(message);
    }
  }
  flushPending();
  return result;
}

function isSameModel(message: AssistantMessage, target: ModelRef): boolean {
  return message.provider === target.provider && message.api === ANTHROPIC_API && message.model === target.modelId;
}

function downgradeForeignAssistant(message: AssistantMessage): AssistantMessage {
  const content = message.content.flatMap((block): AssistantContentBlock[] => {
    if (block.type !== "thinking") return [block];
    if (block.redacted || block.thinking.trim() === "") return [];
    return [{ type: "text", text: block.thinking }];
  });
  return { ...message, content };
}
