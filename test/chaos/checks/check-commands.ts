// Invariant 1: every command has exactly one outcome; every accepted prompt exactly one run and one
// agent_end; re-sending a command id adds nothing.
import type { SentPrompt, SessionLog, Violation } from "./types.js";

export function checkCommands(log: SessionLog, sent: readonly SentPrompt[]): Violation[] {
  const out: Violation[] = [];
  const v = (kind: string, detail: string) =>
    out.push({ invariant: "commands", sessionId: log.sessionId, kind, detail });
  const outcomes = new Map<string, number>();
  for (const e of log.events) {
    if (e.type === "command_accepted" || e.type === "command_rejected") {
      outcomes.set(e.commandId, (outcomes.get(e.commandId) ?? 0) + 1);
    }
  }
  for (const p of sent) {
    if (p.sessionId !== log.sessionId) continue;
    const n = outcomes.get(p.commandId) ?? 0;
    // A publish that was never acknowledged may or may not have been stored: at most one outcome.
    if (n === 0 && !p.stored) continue;
    if (n !== 1)
      v(n === 0 ? "no_outcome" : "duplicate_outcome", `command ${p.commandId} (sent ${p.sends}x) has ${n} outcomes`);
  }
  // Each accepted prompt is followed by exactly one agent_start before the next accepted prompt.
  const prompts: { commandId: string; starts: number; ends: number }[] = [];
  const runsOpened = new Set<string>();
  for (const e of log.events) {
    if (e.type === "command_accepted" && e.commandType === "prompt") {
      prompts.push({ commandId: e.commandId, starts: 0, ends: 0 });
    } else if (e.type === "agent_start") {
      const current = prompts[prompts.length - 1];
      if (current) current.starts++;
      if (e.meta.runId) runsOpened.add(e.meta.runId);
    }
  }
  const ends = new Map<string, number>();
  for (const e of log.events) {
    if (e.type === "agent_end" && e.meta.runId) ends.set(e.meta.runId, (ends.get(e.meta.runId) ?? 0) + 1);
  }
  for (const p of prompts) {
    if (p.starts !== 1) v("prompt_runs", `accepted prompt ${p.commandId} started ${p.starts} runs`);
  }
  for (const runId of runsOpened) {
    const n = ends.get(runId) ?? 0;
    if (n > 1) v("duplicate_agent_end", `run ${runId} has ${n} agent_end events`);
  }
  return out;
}
