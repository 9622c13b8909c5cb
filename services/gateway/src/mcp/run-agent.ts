// `run_agent`: one prompt to a session, waited for until its run ends (the imperative shell).
import { type FleetClient, newId, newSessionId } from "@fleet/client";
import { decideFinalAnswer, type FinalAnswer, parseModelArg } from "./final-answer.js";

export interface RunAgentInput {
  prompt: string;
  sessionId?: string;
  /** `provider/modelId` or a model id of Anthropic. */
  model?: string;
}

export type RunAgentOutcome =
  | ({ ok: true; sessionId: string } & FinalAnswer)
  | { ok: false; sessionId: string; error: string };

export interface RunAgentIo {
  /** Aborted when the MCP client cancels: the run is aborted (`abort` command) and its end awaited. */
  signal: AbortSignal;
  /** Each step of the run (a tool starting, a turn ending); never throws. */
  progress: (step: number, message: string) => void;
}

/**
 * Prompts `sessionId` (a new session when absent; `model` set first when given) and follows its log
 * from before the prompt until the run's `agent_end`. A rejected prompt (`busy`, a budget) is an
 * `ok: false` outcome naming the rejection; other failures (NATS) reject.
 */
export async function runAgent(client: FleetClient, input: RunAgentInput, io: RunAgentIo): Promise<RunAgentOutcome> {
  const sessionId = input.sessionId ?? newSessionId();
  if (input.model !== undefined) {
    const model = parseModelArg(input.model);
    const set = input.sessionId
      ? await client.outcomeOf(sessionId, { type: "set_model", ...model })
      : await client.outcomeOf(sessionId, { type: "create_session", config: { model } });
    if (set.event.type === "command_rejected") {
      return { ok: false, sessionId, error: `model ${input.model} refused (${set.event.code}): ${set.event.reason}` };
    }
  }
  const from = (await client.lastSeq(sessionId)) + 1;
  const stop = new AbortController();
  const events = client.events(sessionId, { from, signal: stop.signal });
  const commandId = newId();
  const onCancel = () => void client.abort(sessionId).catch(() => undefined);
  try {
    const outcome = await client.outcomeOf(sessionId, { type: "prompt", text: input.prompt }, { commandId });
    if (outcome.event.type === "command_rejected") {
      return { ok: false, sessionId, error: `prompt refused (${outcome.event.code}): ${outcome.event.reason}` };
    }
    io.signal.addEventListener("abort", onCancel, { once: true });
    if (io.signal.aborted) onCancel();
    let started = false;
    let step = 0;
    for await (const { seq, event } of events) {
      if (seq <= outcome.seq) continue;
      if (event.type === "agent_start") started = true;
      if (!started) continue;
      if (event.type === "tool_execution_start") io.progress(++step, `running ${event.toolName}`);
      else if (event.type === "turn_end") io.progress(++step, "turn finished");
      else if (event.type === "agent_end") return { ok: true, sessionId, ...decideFinalAnswer(event.messages) };
    }
    return { ok: false, sessionId, error: "the session's log ended before the run did" };
  } finally {
    io.signal.removeEventListener("abort", onCancel);
    stop.abort();
  }
}
