// Test entry of @fleet/tools (`@fleet/tools/testing`, sources only, not built): runs a tool in
// process against a temp workspace, as the runner would.

export { processesMatching } from "./find-processes.js";
export {
  flipCommand,
  layRaceScene,
  OUTSIDE_MARK,
  racingCalls,
  showsOutside,
  untilFlipping,
} from "./symlink-race.js";
export { createHarness, type Harness, textOf } from "./tool-harness.js";
