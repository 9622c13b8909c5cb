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
export { startLoopWorker } from "./loop-worker.js";
export type { LoopLifecycleOptions, LoopWorker, LoopWorkerOptions } from "./loop-worker-options.js";
export {
  createAnthropicStreamFn,
  createModelCatalog,
  createPiAiStreamFn,
  type ModelCatalog,
  parseModelsJson,
  piAiProviders,
} from "./providers/index.js";
export { createScriptedStreamFn } from "./scripted-stream-fn.js";
export type { ActorSettings } from "./session-actor.js";
export { type LoadedSession, loadSession, type SnapshotSettings } from "./snapshots/session-load.js";
export { createSnapshotMetrics, type SnapshotMetrics } from "./snapshots/snapshot-metrics.js";
export { createSnapshotStore, type SnapshotStore } from "./snapshots/snapshot-store.js";
export { DEFAULT_SNAPSHOT_EVERY } from "./snapshots/snapshot-writer.js";
export type { SubAgentSettings } from "./sub-agents/sub-agent-port.js";
export { DEFAULT_TOOL_PICKUP_MS } from "./tool-dispatcher.js";
