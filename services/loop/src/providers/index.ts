// Public surface of the loop's LLM providers.

export {
  type AnthropicProviderOptions,
  createAnthropicStreamFn,
  DEFAULT_MAX_RETRIES,
  MISSING_API_KEY_MESSAGE,
} from "./anthropic-stream-fn.js";
export { CUSTOM_MODEL_DEFAULTS, createModelCatalog, type ModelCatalog, type ResolvedModel } from "./model-catalog.js";
export {
  computeCost,
  DEFAULT_CONTEXT_WINDOW,
  DEFAULT_MAX_OUTPUT_TOKENS,
  getModelInfo,
  knownModelIds,
  type ModelInfo,
  type ModelPrice,
} from "./models.js";
export { ModelsJson, type ParsedModelsJson, parseModelsJson } from "./models-json.js";
export { createPiAiStreamFn, type PiAiProviderOptions, piAiProviders } from "./pi-ai-stream-fn.js";
export { ANTHROPIC_API, NO_RESULT_PROVIDED, prepareReplayMessages } from "./prepare-replay-messages.js";
export { buildThinkingConfig, THINKING_BUDGETS } from "./thinking-budget.js";
export type { LlmContext, LlmTool, StreamFn, StreamOptions } from "./types.js";
