// Session writes requested through the shell: appended at once when idle, buffered during a run
// and flushed in FIFO order at `turn_end` and before `agent_end` (pi 0.75 harness pending writes).
import type { AgentMessage, ThinkingLevel } from "@fleet/protocol";
import type { LoopEventBody } from "./types.js";

export type SessionWrite =
  | { type: "model_change"; provider: string; modelId: string }
  | { type: "thinking_level_change"; thinkingLevel: ThinkingLevel }
  | { type: "active_tools_change"; toolNames: string[] }
  | { type: "label"; targetId: string; label: string | null }
  | { type: "session_info"; name: string }
  | { type: "custom"; customType: string; data: unknown }
  /** A message appended to the transcript outside the queues: `message_start` + `message_end`. */
  | { type: "message"; message: AgentMessage };

/** The events one write appends, in order. */
export function writeEvents(write: SessionWrite): LoopEventBody[] {
  if (write.type === "message") {
    return [
      { type: "message_start", message: write.message },
      { type: "message_end", message: write.message },
    ];
  }
  return [write];
}

/** True for writes the next LLM call of a running run must see (harness `prepareNextTurn`). */
export const affectsNextTurn = (write: SessionWrite): boolean =>
  write.type === "model_change" ||
  write.type === "thinking_level_change" ||
  write.type === "active_tools_change" ||
  write.type === "message";
