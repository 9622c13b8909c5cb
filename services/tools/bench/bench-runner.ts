// Runner process for the benchmark: one trivial tool.
import { defineTool, runToolRunnerProcess } from "@fleet/tools";
import { z } from "zod";

const noop = defineTool({
  name: "noop",
  description: "Returns ok",
  parameters: z.object({ i: z.number().optional() }),
  execute: () => "ok",
});

await runToolRunnerProcess({ service: "fleet-tools-bench", tools: [noop] });
