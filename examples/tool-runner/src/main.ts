// An example tool runner: the custom `word_count` tool next to pi's built-in coding tools.
// Run it with `npm start -w @fleet/example-tool-runner` (NATS_URL, FLEET_WORKSPACE, ... as for services/tools).
import { builtinTools, runToolRunnerProcess } from "@fleet/tools";
import { wordCount } from "./word-count.js";

await runToolRunnerProcess({ service: "example-tool-runner", tools: [wordCount, ...builtinTools] });
