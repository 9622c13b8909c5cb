// Test entry of @fleet/loop (`@fleet/loop/testing`, sources only, not built): the engine's in-memory
// test harness (fixed clock and ids, recorders, deferreds).

export {
  defaultConfig,
  deferred,
  echoTool,
  flush,
  manualSleep,
  objectSchema,
  type Recorder,
  recorder,
  resultText,
  sequentialIds,
  T0,
  trace,
  user,
} from "../engine/testing/harness.js";
