// Invariant 2: a log is well formed: unique event ids, a consistent entry chain, one end per tool
// execution start, and runs that do not interleave.
import type { SessionLog, Violation } from "./types.js";

export function checkLogShape(log: SessionLog): Violation[] {
  const out: Violation[] = [];
  const v = (kind: string, detail: string) => out.push({ invariant: "log", sessionId: log.sessionId, kind, detail });
  if (log.invalid > 0) v("invalid_event", `${log.invalid} stored messages do not decode as events`);

  const ids = new Set<string>();
  const entries = new Set<string>();
  let leaf: string | null = null;
  const starts = new Map<string, number>();
  const endsOf = new Map<string, number>();
  let openRun: string | undefined;
  for (const [i, e] of log.events.entries()) {
    if (ids.has(e.meta.id)) v("duplicate_event_id", `event ${e.meta.id} (${e.type}) at index ${i} appears twice`);
    ids.add(e.meta.id);
    if (e.meta.sessionId !== log.sessionId) v("foreign_event", `${e.type} ${e.meta.id} names ${e.meta.sessionId}`);

    if (e.type === "leaf") leaf = e.targetId;
    if ("entry" in e) {
      if (e.entry.id !== e.meta.id) v("entry_id", `${e.type} entry ${e.entry.id} differs from its event id`);
      if (entries.has(e.entry.id)) v("duplicate_entry", `entry ${e.entry.id} created twice`);
      if (e.entry.parentId !== leaf) {
        v("entry_chain", `${e.type} ${e.entry.id} has parent ${e.entry.parentId}, the leaf was ${leaf}`);
      }
      entries.add(e.entry.id);
      leaf = e.entry.id;
    }

    if (e.type === "tool_execution_start") starts.set(e.toolCallId, (starts.get(e.toolCallId) ?? 0) + 1);
    if (e.type === "tool_execution_end") endsOf.set(e.toolCallId, (endsOf.get(e.toolCallId) ?? 0) + 1);

    const runId = e.meta.runId;
    if (e.type === "agent_start") {
      if (openRun !== undefined) v("runs_interleave", `run ${runId} starts while run ${openRun} is open`);
      openRun = runId;
    } else if (runId !== undefined && openRun !== undefined && runId !== openRun) {
      v("runs_interleave", `${e.type} of run ${runId} inside run ${openRun}`);
    } else if (runId !== undefined && openRun === undefined && e.type !== "run_resumed") {
      v("event_outside_run", `${e.type} ${e.meta.id} carries run ${runId}, no run is open`);
    }
    if (e.type === "agent_end") openRun = undefined;
  }
  for (const [callId, n] of starts) {
    const m = endsOf.get(callId) ?? 0;
    if (n !== 1 || m !== 1) v("tool_start_end", `tool call ${callId}: ${n} starts, ${m} ends`);
  }
  for (const [callId, m] of endsOf) {
    if (!starts.has(callId)) v("tool_start_end", `tool call ${callId}: 0 starts, ${m} ends`);
  }
  return out;
}
