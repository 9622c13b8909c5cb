// Dead-runner detection, measured from the logs: for each runner kill, how long the tool calls that
// were in flight at that moment took to get their end (the killed runner's calls dominate the max).
import type { SessionLog } from "./types.js";

export interface RunnerSettle {
  /** Milliseconds from the kill to each in-flight call's `tool_execution_end`. */
  settledMs: number[];
  /** In-flight calls that never got an end. */
  unsettled: number;
}

/** `killTimes` and event `meta.ts` are epoch milliseconds of the same machine. */
export function measureRunnerSettle(logs: readonly SessionLog[], killTimes: readonly number[]): RunnerSettle {
  const out: RunnerSettle = { settledMs: [], unsettled: 0 };
  const calls: { start: number; end: number | undefined }[] = [];
  for (const log of logs) {
    const starts = new Map<string, number>();
    const ends = new Map<string, number>();
    for (const e of log.events) {
      if (e.type === "tool_execution_start" && !starts.has(e.toolCallId)) starts.set(e.toolCallId, e.meta.ts);
      if (e.type === "tool_execution_end" && !ends.has(e.toolCallId)) ends.set(e.toolCallId, e.meta.ts);
    }
    for (const [id, start] of starts) calls.push({ start, end: ends.get(id) });
  }
  for (const kill of killTimes) {
    for (const c of calls) {
      if (c.start > kill || (c.end !== undefined && c.end < kill)) continue;
      if (c.end === undefined) out.unsettled++;
      else out.settledMs.push(c.end - kill);
    }
  }
  return out;
}
