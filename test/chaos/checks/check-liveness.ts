// Invariant 5: nothing is stuck: every run ended, and the probe prompt sent after the faults completed.
import type { SentPrompt, SessionLog, Violation } from "./types.js";

export function checkLiveness(log: SessionLog, sent: readonly SentPrompt[]): Violation[] {
  const out = checkRunsEnded(log);
  const v = (kind: string, detail: string) => out.push({ invariant: "stuck", sessionId: log.sessionId, kind, detail });
  const probes = sent.filter((p) => p.sessionId === log.sessionId && p.probe);
  if (probes.length === 0) v("probe_missing", "no probe prompt was sent");
  for (const p of probes) {
    if (!p.done) v("probe_stuck", `probe prompt ${p.commandId} (${p.outcome ?? "no outcome"}) did not complete`);
  }
  return out;
}

/** Runs of the log that started and never ended (their ids), in order of start. */
export function openRuns(log: SessionLog): string[] {
  const open = new Set<string>();
  for (const e of log.events) {
    if (e.type === "agent_start" && e.meta.runId) open.add(e.meta.runId);
    if (e.type === "agent_end" && e.meta.runId) open.delete(e.meta.runId);
  }
  return [...open];
}

/** Every run of the log ended (for sessions without a probe prompt, such as a schedule's). */
export function checkRunsEnded(log: SessionLog): Violation[] {
  return openRuns(log).map((runId) => ({
    invariant: "stuck",
    sessionId: log.sessionId,
    kind: "run_open",
    detail: `run ${runId} never ended`,
  }));
}
