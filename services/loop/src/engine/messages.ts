// Messages the engine builds itself. Texts are pi's.
import {
  ABORTED_ERROR_MESSAGE,
  type AgentMessage,
  type AssistantMessage,
  type ContextMessage,
  emptyUsage,
  type ImageContent,
  type LlmMessage,
  parseStreamingJson,
  type TextContent,
} from "@fleet/protocol";
import { foreignErrorText } from "../session-core/turn-boundary.js";
import type { EngineModel, ToolExecutionOutcome } from "./types.js";

/** pi's message for anything thrown that is not an Error: `String(value)`. */
export const thrownText = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** pi's `createErrorToolResult`: one text block and empty details. */
export const errorToolResult = (text: string): ToolExecutionOutcome["result"] => ({
  content: [{ type: "text", text }],
  details: {},
});

export { createToolResultMessage } from "../session-core/tool-result.js";

/** pi's `Agent.prompt(text, images)`: one user message, text block first. */
export function createUserMessage(text: string, images: readonly ImageContent[] | undefined, timestamp: number) {
  const content: (TextContent | ImageContent)[] = [{ type: "text", text }];
  if (images) content.push(...images);
  return { role: "user" as const, content, timestamp };
}

/** An assistant message the engine makes up (failure, abort before `start`): empty usage, the run's model. */
export function syntheticAssistant(
  model: EngineModel,
  stopReason: "error" | "aborted",
  errorMessage: string,
  timestamp: number,
  content: AssistantMessage["content"] = [],
): AssistantMessage {
  return {
    role: "assistant",
    content,
    api: model.api ?? model.provider,
    provider: model.provider,
    model: model.modelId,
    usage: emptyUsage(),
    stopReason,
    errorMessage,
    timestamp,
  };
}

/** pi 0.75 failure message for a run that threw: one empty text block. */
export const failureMessage = (model: EngineModel, aborted: boolean, error: unknown, timestamp: number) =>
  syntheticAssistant(model, aborted ? "aborted" : "error", foreignErrorText(thrownText(error)), timestamp, [
    { type: "text", text: "" },
  ]);

/** The message of a stream cut by abort: everything streamed so far, `Request was aborted`. */
export function abortedAssistant(partial: AssistantMessage, timestamp: number): AssistantMessage {
  return {
    ...partial,
    content: finishedContent(partial.content),
    stopReason: "aborted",
    errorMessage: ABORTED_ERROR_MESSAGE,
    timestamp,
  };
}

/**
 * Finishes the blocks of a partial message: a tool call still streaming gets the arguments parsed
 * from its JSON so far, and loses the streaming-only `partialJson`.
 */
export function finishedContent(content: AssistantMessage["content"]): AssistantMessage["content"] {
  return content.map((block) => {
    if (block.type !== "toolCall" || !("partialJson" in block)) return block;
    const { partialJson, ...rest } = block;
    return { ...rest, arguments: typeof partialJson === "string" ? parseStreamingJson(partialJson) : rest.arguments };
  });
}

/** pi agent-core's default `convertToLlm`: keeps the three provider roles, drops everything else. */
export function defaultConvertToLlm(messages: ContextMessage[]): LlmMessage[] {
  return messages.filter(
    (m): m is LlmMessage => m.role === "user" || m.role === "assistant" || m.role === "toolResult",
  );
}

export const isAssistant = (m: AgentMessage | ContextMessage | undefined): m is AssistantMessage =>
  m?.role === "assistant";
