// Invariant 5: nothing is stuck: every run ended, and the probe prompt sent after the faults completed.
import type { SentPrompt, SessionLog, Violation } from "./types.js";

export function checkLiveness(log: SessionLog, sent: readonly SentPrompt[]): Violation[] {
  const out: Violation[] = [];
  const v = (kind: string, detail: string) => out.push({ invariant: "stuck", sessionId: log.sessionId, kind, detail });
  const open = new Set<string>();
  for (const e of log.events) {
    if (e.type === "agent_start" && e.meta.runId) open.add(e.meta.runId);
    if (e.type === "agent_end" && e.meta.runId) open.delete(e.meta.runId);
  }
  for (const runId of open) v("run_open", `run ${runId} never ended`);
  const probes = sent.filter((p) => p.sessionId === log.sessionId && p.probe);
  if (probes.length === 0) v("probe_missing", "no probe prompt was sent");
  for (const p of probes) {
    if (!p.done) v("probe_stuck", `probe prompt ${p.commandId} (${p.outcome ?? "no outcome"}) did not complete`);
  }
  return out;
}
