// Public surface of @fleet/loop: the loop worker, its LLM providers, plugin hooks and the engine.

export { LoopEnv } from "./config.js";
export {
  createScriptedProvider,
  type EngineHooks,
  parseScript,
  type ScriptedProvider,
  type ScriptRequest,
  type ScriptStep,
  type StreamFn,
  type ToolDefinition,
} from "./engine/index.js";
export { loadPluginHooks } from "./hooks.js";
export {
  type LoopLifecycleOptions,
  type LoopWorker,
  type LoopWorkerOptions,
  startLoopWorker,
} from "./loop-worker.js";
export { createAnthropicStreamFn } from "./providers/index.js";
export { createScriptedStreamFn } from "./scripted-stream-fn.js";
export type { ActorSettings } from "./session-actor.js";
export { DEFAULT_TOOL_PICKUP_MS } from "./tool-dispatcher.js";
