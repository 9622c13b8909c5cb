// Invariant 3: tool side effects agree with the log and the tools' retry policies.
import type { Executions, SessionLog, ToolPolicies, Violation } from "./types.js";

/**
 * - a `retry: never` call ran at most once; a `retry: safe` call whose end is logged ran at least once;
 * - a call whose successful result is logged ran at least once;
 * - a call is not ended as aborted when the session was never sent an abort (`abortsSent` = 0).
 */
export function checkToolEffects(
  log: SessionLog,
  executions: Executions,
  policies: ToolPolicies,
  abortsSent: number,
): Violation[] {
  const out: Violation[] = [];
  const v = (kind: string, detail: string) => out.push({ invariant: "tools", sessionId: log.sessionId, kind, detail });
  const names = new Map<string, string>();
  for (const e of log.events) if (e.type === "tool_execution_start") names.set(e.toolCallId, e.toolName);
  for (const [callId, name] of names) {
    const runs = executions.get(callId) ?? 0;
    if (policies[name] === "never" && runs > 1) v("ran_twice", `${name} ${callId} (retry: never) ran ${runs} times`);
  }
  for (const e of log.events) {
    if (e.type !== "tool_execution_end") continue;
    const runs = executions.get(e.toolCallId) ?? 0;
    const text = e.result.content.map((c) => (c.type === "text" ? c.text : "")).join(" ");
    if (policies[e.toolName] === "safe" && runs === 0) {
      v(
        "safe_never_ran",
        `${e.toolName} ${e.toolCallId} (retry: safe) ended (${e.isError ? `error: ${text}` : "ok"}) but never ran`,
      );
    } else if (!e.isError && runs === 0) {
      v("result_without_run", `${e.toolName} ${e.toolCallId} has a successful result but never ran`);
    }
    if (e.isError && abortsSent === 0 && /aborted/i.test(text)) {
      v("aborted_without_abort", `${e.toolName} ${e.toolCallId} ended "${text}" though no abort was sent`);
    }
  }
  return out;
}
