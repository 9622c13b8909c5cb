// Test entry of @fleet/loop (`@fleet/loop/testing`, sources only, not built): the decider's
// given/when/then spec helper, and the engine's in-memory
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
export { startedChildCall, writeChildEvents } from "./child-call.js";
export {
  command,
  type Given,
  given,
  givenLog,
  HELLO,
  HI,
  ONE_RUN,
  type Outcome,
  SPEC_DEFAULTS,
  SPEC_TOOLS,
  type SpecEvent,
  withoutMeta,
} from "./decider-spec.js";
