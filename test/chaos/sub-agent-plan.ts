// The chaos workload's sub-agent prompts (issue 29): which prompts hand work to children through the
// built-in `agent` tool, what the stateless model does for a parent and for a child, and which
// parents the workload aborts while their children run. Everything is a pure function of the text.
import { AGENT_TOOL_NAME, fnv1a32 } from "@fleet/protocol";
import type { StatelessToolUse } from "@fleet/testkit";

/** What one workload prompt asks for: `agents` parallel `agent` calls (0: none), aborted mid-way or not. */
export interface PromptKind {
  agents: number;
  abort: boolean;
}

/** How long a child's bash sleeps: long under a parent that will be aborted, so the abort finds it running. */
export const CHILD_SLEEP_S = { normal: 0.3, abortable: 4 } as const;

/**
 * Of every ten prompts (by a hash of session and number): two call 1–3 agents in parallel, one calls
 * 2–3 agents and is aborted while they run, seven are plain. Probe prompts are always plain (they
 * must complete).
 */
export function promptKind(sessionId: string, n: number, probe: boolean): PromptKind {
  if (probe) return { agents: 0, abort: false };
  const h = fnv1a32(`${sessionId}#${n}`);
  const r = h % 10;
  if (r < 2) return { agents: 1 + ((h >>> 8) % 3), abort: false };
  if (r === 2) return { agents: 2 + ((h >>> 8) % 2), abort: true };
  return { agents: 0, abort: false };
}

/** The text of the workload's `n`th prompt to a session; the model reads its kind back from it. */
export function promptText(sessionId: string, n: number, probe: boolean): string {
  const kind = promptKind(sessionId, n, probe);
  const base = `chaos ${sessionId} #${n}${probe ? " probe" : ""}`;
  if (kind.agents === 0) return base;
  return `${base} agents ${kind.agents}${kind.abort ? " abort" : ""}`;
}

const PARENT = / agents (\d+)( abort)?$/;
const CHILD = /^task (\d+) of: /;

/** A child's prompt: its place among its parent's calls and the parent's prompt. */
export const childPrompt = (j: number, parentPrompt: string) => `task ${j} of: ${parentPrompt}`;

/** A child's final answer (the parent's tool result must be exactly this). */
export const finalAnswer = (prompt: string) => `done: ${prompt}`;

/**
 * The tool calls of a sub-agent prompt's first turn, or undefined for a plain prompt. A parent calls
 * `agent` once per child (suffix `a<j>`), nothing else (an aborted write would break the tools'
 * invariant). A child runs one bash call (a line in its own workspace, then a sleep), then answers.
 */
export function subAgentTools(
  prompt: string,
  idOf: (suffix: string) => string,
  bashFile: (callId: string) => string,
): readonly StatelessToolUse[] | undefined {
  if (CHILD.test(prompt)) {
    const sleep = PARENT.exec(prompt)?.[2] ? CHILD_SLEEP_S.abortable : CHILD_SLEEP_S.normal;
    return [{ suffix: "b", name: "bash", input: { command: `echo ran >> ${bashFile(idOf("b"))} && sleep ${sleep}` } }];
  }
  const parent = PARENT.exec(prompt);
  if (!parent) return undefined;
  const n = Number(parent[1]);
  return Array.from({ length: n }, (_, j) => ({
    suffix: `a${j}`,
    name: AGENT_TOOL_NAME,
    input: { prompt: childPrompt(j, prompt), description: `part ${j}` },
  }));
}
