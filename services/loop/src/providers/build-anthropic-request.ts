import type { Anthropic } from "@anthropic-ai/sdk";
import type { ModelInfo } from "./models.js";
import { prepareReplayMessages } from "./prepare-replay-messages.js";
import { buildThinkingConfig } from "./thinking-budget.js";
import { EPHEMERAL_CACHE, toAnthropicMessages } from "./to-anthropic-messages.js";
import type { LlmContext, LlmTool, StreamOptions } from "./types.js";

/**
 * The streaming Messages request for one call:
 * - `max_tokens` = `options.maxTokens` ?? the model's max output tokens;
 * - `system` = one text block with `cache_control: ephemeral` (omitted when the prompt is blank);
 * - `messages` = the context after pi's replay rules, with `cache_control` on the last user turn;
 * - `tools` = name, description and the JSON Schema as `input_schema` (omitted when there are none);
 * - `thinking` from the thinking level (see `thinking-budget.ts`).
 */
export function buildAnthropicRequest(
  context: LlmContext,
  options: StreamOptions,
  model: ModelInfo,
): Anthropic.MessageCreateParamsStreaming {
  const maxTokens = options.maxTokens ?? model.maxOutputTokens;
  const messages = toAnthropicMessages(prepareReplayMessages(context.messages, options.model));
  return {
    model: options.model.modelId,
    max_tokens: maxTokens,
    ...(context.systemPrompt.trim() === ""
      ? {}
      : { system: [{ type: "text", text: context.systemPrompt, cache_control: EPHEMERAL_CACHE }] }),
    messages,
    ...(context.tools.length > 0 ? { tools: context.tools.map(toAnthropicTool) } : {}),
    thinking: buildThinkingConfig(options.thinkingLevel, maxTokens),
    stream: true,
  };
}

/** The registered JSON Schema is sent as is; `type` is forced to "object" as the API requires. */
export function toAnthropicTool(tool: LlmTool): Anthropic.Tool {
  return { name: tool.name, description: tool.description, input_schema: { ...tool.parameters, type: "object" } };
}
