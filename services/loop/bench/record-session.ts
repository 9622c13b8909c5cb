// Recording a session's log for the benches: the engine runs scripted prompts in memory and the
// emit port stamps and folds each event as the service's shell does (deltas coalesced).
import type { FleetEvent } from "@fleet/protocol";
import { createInProcessExecutor } from "../src/engine/in-process-tools.js";
import type { ScriptTurnInput } from "../src/engine/script.js";
import { createScriptedProvider } from "../src/engine/scripted-provider.js";
import { SessionEngine } from "../src/engine/session-engine.js";
import { inMemorySession } from "./in-memory-session.js";
import { echo, echoResult, engineConfig, lsResult, lsTool } from "./workloads.js";

/**
 * Every event of (up to) `prompts` prompts of one session, from `session_created` on, as folded;
 * `until(events)` after a prompt stops the recording early.
 */
export async function record(
  prompts: number,
  steps: (prompt: number) => ScriptTurnInput[],
  chunkChars?: number,
  opts: { sessionId?: string; until?: (events: readonly FleetEvent[]) => boolean } = {},
): Promise<FleetEvent[]> {
  let next = 0;
  const newId = () => `id-${++next}`;
  const now = () => 1_700_000_000_000 + next;
  const provider = createScriptedProvider({ steps: [], now, chunkChars, recordRequests: false });
  const events: FleetEvent[] = [];
  const { session, emit } = inMemorySession(opts.sessionId ?? "s-1", engineConfig, (event) => events.push(event));
  const executeTool = createInProcessExecutor({
    echo: (args) => echoResult((args as { text: string }).text),
    ls: lsResult,
  });
  const engine = new SessionEngine({
    ports: { streamFn: provider.streamFn, executeTool, emit, now, newId },
    tools: [echo, lsTool],
    session,
  });
  for (let p = 0; p < prompts; p++) {
    provider.append(...steps(p));
    const result = await engine.prompt(`prompt ${p}`);
    if (result.status !== "completed") throw new Error(`recording run ${result.status}`);
    if (opts.until?.(events)) break;
  }
  return events;
}
