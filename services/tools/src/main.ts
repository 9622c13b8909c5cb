// Process entry of the built-in tool runner: serves the tools named in FLEET_TOOLS.
import { selectBuiltinTools } from "./builtin/index.js";
import { runToolRunnerProcess } from "./run-process.js";

await runToolRunnerProcess({
  tools: (env) => {
    const picked = selectBuiltinTools(env.FLEET_TOOLS);
    if (!picked.ok) {
      process.stderr.write(`fleet-tools: FLEET_TOOLS: ${picked.error}\n`);
      process.exit(2);
    }
    return picked.tools;
  },
});
