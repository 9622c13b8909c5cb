// The workload: sessions that each send prompts one after another through the client SDK and wait
// for each run's agent_end. A command that gets no outcome in time is re-sent with the same id.
import { type CommandOutcome, CommandRejectedError, type FleetClient, isFleetError, newId } from "@fleet/client";
import { AGENT_TOOL_NAME, type FleetEvent } from "@fleet/protocol";
import type { SentAbort, SentPrompt } from "./checks/types.js";
import { promptKind, promptText } from "./sub-agent-plan.js";

export interface WorkloadSettings {
  client: FleetClient;
  sessionIds: readonly string[];
  /** How long one send waits for the outcome before re-sending. */
  commandTimeoutMs: number;
  /** How long a prompt may take, from the first send to its agent_end. */
  promptTimeoutMs: number;
  log: (line: string) => void;
}

export interface Workload {
  readonly prompts: SentPrompt[];
  /** Aborts sent to parents of sub-agent prompts while their `agent` calls ran. */
  readonly aborts: SentAbort[];
  /** Milliseconds from first send to agent_end, of every completed prompt. */
  readonly latencies: number[];
  /** Stops starting new prompts; resolves once every session's current prompt is over. */
  drain(): Promise<void>;
  /** One more prompt in every session (`probe: true`); resolves when all are over. */
  probe(): Promise<void>;
}

export function startWorkload(s: WorkloadSettings): Workload {
  const prompts: SentPrompt[] = [];
  const aborts: SentAbort[] = [];
  const latencies: number[] = [];
  let draining = false;

  const runPrompt = async (sessionId: string, n: number, probe: boolean): Promise<SentPrompt> => {
    const rec: SentPrompt = { sessionId, commandId: newId(), sends: 0, stored: false, done: false, probe };
    prompts.push(rec);
    const text = promptText(sessionId, n, probe);
    const started = Date.now();
    const deadline = started + s.promptTimeoutMs;
    let accepted: CommandOutcome | undefined;
    while (accepted === undefined && Date.now() < deadline) {
      rec.sends++;
      try {
        const timeoutMs = Math.max(1, Math.min(s.commandTimeoutMs, deadline - Date.now()));
        accepted = await s.client.prompt(sessionId, text, { commandId: rec.commandId, timeoutMs });
        rec.stored = true;
      } catch (err) {
        // A timeout comes after an acknowledged publish; `unavailable` before or during it.
        if (isFleetError(err) && err.kind !== "unavailable") rec.stored = true;
        if (err instanceof CommandRejectedError) {
          rec.outcome = "rejected";
          s.log(`  ${sessionId} prompt ${rec.commandId} rejected ${err.code}: ${err.reason}`);
          return rec;
        }
        await new Promise((r) => setTimeout(r, 250));
      }
    }
    if (accepted === undefined) return rec;
    rec.outcome = "accepted";
    // An abort prompt: once an `agent` call started, wait a second (its children run), then abort.
    let abortAt: Promise<void> | undefined;
    const onEvent = promptKind(sessionId, n, probe).abort
      ? (e: FleetEvent) => {
          if (abortAt || e.type !== "tool_execution_start" || e.toolName !== AGENT_TOOL_NAME) return;
          abortAt = new Promise((r) => setTimeout(r, 1_000)).then(() => sendAbort(sessionId, deadline));
        }
      : undefined;
    rec.done = await waitForRunEnd(s.client, sessionId, accepted.seq + 1, deadline, onEvent);
    await abortAt;
    if (rec.done) latencies.push(Date.now() - started);
    else s.log(`  ${sessionId} prompt ${rec.commandId}: no agent_end within ${s.promptTimeoutMs} ms`);
    return rec;
  };

  /** Sends one abort (re-sent with the same id until it has an outcome) and records it. */
  const sendAbort = async (sessionId: string, deadline: number) => {
    const rec: SentAbort = { sessionId, commandId: newId(), sends: 0, stored: false };
    aborts.push(rec);
    while (rec.outcome === undefined && Date.now() < deadline) {
      rec.sends++;
      try {
        const timeoutMs = Math.max(1, Math.min(s.commandTimeoutMs, deadline - Date.now()));
        const outcome = await s.client.outcomeOf(sessionId, { type: "abort" }, { commandId: rec.commandId, timeoutMs });
        rec.stored = true;
        rec.outcome = outcome.event.type === "command_accepted" ? "accepted" : "rejected";
      } catch (err) {
        if (isFleetError(err) && err.kind !== "unavailable") rec.stored = true;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  };

  const counters = new Map<string, number>();
  const next = (sessionId: string) => {
    const n = (counters.get(sessionId) ?? 0) + 1;
    counters.set(sessionId, n);
    return n;
  };

  const sessionLoop = async (sessionId: string) => {
    while (!draining) {
      const rec = await runPrompt(sessionId, next(sessionId), false);
      if (rec.outcome === "accepted" && !rec.done) return; // stuck: the probe and checks will tell
      if (!rec.done) await new Promise((r) => setTimeout(r, 1_000));
    }
  };
  const loops = s.sessionIds.map((id) => sessionLoop(id));

  return {
    prompts,
    aborts,
    latencies,
    async drain() {
      draining = true;
      await Promise.all(loops);
    },
    async probe() {
      await Promise.all(s.sessionIds.map((id) => runPrompt(id, next(id), true)));
    },
  };
}

/**
 * Reads the session from `fromSeq` until the first run there ends, showing `onEvent` each event
 * read; false at the deadline.
 */
async function waitForRunEnd(
  client: FleetClient,
  sessionId: string,
  fromSeq: number,
  deadline: number,
  onEvent?: (event: FleetEvent) => void,
) {
  let from = fromSeq;
  let runId: string | undefined;
  while (Date.now() < deadline) {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), deadline - Date.now());
    try {
      for await (const { seq, event } of client.events(sessionId, { from, signal: abort.signal })) {
        from = seq + 1;
        onEvent?.(event);
        if (event.type === "agent_start" && runId === undefined) runId = event.meta.runId;
        if (event.type === "agent_end" && (runId === undefined || event.meta.runId === runId)) return true;
      }
    } catch {
      await new Promise((r) => setTimeout(r, 250));
    } finally {
      clearTimeout(timer);
    }
  }
  return false;
}
