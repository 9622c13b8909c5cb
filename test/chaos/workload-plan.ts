// What the stateless model does for a chaos prompt, and how the suite counts the tools' side effects.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { StatelessPlan } from "@fleet/testkit";
import type { ToolPolicies } from "./checks/types.js";
import { finalAnswer, subAgentTools } from "./sub-agent-plan.js";

/** The tools the workload's runs call, with their retry policies as the built-in runner declares them. */
export const CHAOS_TOOL_POLICIES: ToolPolicies = { bash: "never", write: "safe" };

const bashFile = (callId: string) => `bash-${callId}.log`;
const writeFile = (callId: string) => `write-${callId}.txt`;

/**
 * A prompt makes the model call `bash` (appends one line to a file named by the call id, then
 * sleeps briefly so faults can land mid-call) and `write` (a file named by the call id), then reply.
 * A sub-agent prompt calls `agent` instead, and a child's prompt one `bash` (see sub-agent-plan.ts).
 */
export const chaosPlan: StatelessPlan = {
  toolsFor: (prompt, idOf) =>
    subAgentTools(prompt, idOf, bashFile) ?? [
      { suffix: "b", name: "bash", input: { command: `echo ran >> ${bashFile(idOf("b"))} && sleep 0.3` } },
      { suffix: "w", name: "write", input: { path: writeFile(idOf("w")), content: `${prompt}\n` } },
    ],
  finalText: finalAnswer,
};

/** Times each call of a session ran: lines in its bash file, 1 for an existing write file. */
export function countExecutions(sessionDir: string): Map<string, number> {
  const runs = new Map<string, number>();
  if (!existsSync(sessionDir)) return runs;
  for (const name of readdirSync(sessionDir)) {
    const bash = /^bash-(.+)\.log$/.exec(name);
    const write = /^write-(.+)\.txt$/.exec(name);
    if (bash?.[1]) {
      const lines = readFileSync(join(sessionDir, name), "utf8")
        .split("\n")
        .filter((l) => l === "ran");
      runs.set(bash[1], lines.length);
    } else if (write?.[1]) runs.set(write[1], 1);
  }
  return runs;
}
