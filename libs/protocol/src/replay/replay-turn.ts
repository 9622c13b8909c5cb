// The replay decider: from a session's fold, the next turn a replay session runs, if any.
import type { UserMessage } from "../messages.js";
import { type SessionState, sessionActivity } from "../reducers/session-state.js";
import { replayTurnCommandId } from "./replay-record.js";

/**
 * Where a replay stands:
 * - `none`: the session is no replay;
 * - `wait`: a run (accepted or begun), a compaction or a pending write is open; decide again once idle;
 * - `turn`: run turn `index` now: a `prompt` with id `commandId` and `message`;
 * - `done`: every turn ran (`stopped`: turn `index` was refused, e.g. by a budget, and ended the replay).
 */
export type ReplayStep =
  | { kind: "none" }
  | { kind: "wait"; index: number }
  | { kind: "turn"; index: number; commandId: string; message: UserMessage }
  | { kind: "done"; turns: number; stopped?: { index: number; commandId: string } };

/**
 * The next step of the replay `state` records (`session_created.replayOf`). Turn `k` has run (or
 * was refused) once the log holds the outcome of command `replayTurnCommandId(k)`; turns run one at
 * a time, each on an idle session. Pure; never throws.
 */
export function decideReplayTurn(state: SessionState): ReplayStep {
  const replay = state.replay;
  if (!replay) return { kind: "none" };
  // An accepted run that has not begun yet (`pendingTrigger`) is not idle either.
  const cursor = state.cursor;
  const idle =
    sessionActivity(state) === "idle" &&
    !(cursor.kind === "idle" && cursor.pendingTrigger) &&
    state.pendingWrites.length === 0;
  for (const [index, message] of replay.turns.entries()) {
    const commandId = replayTurnCommandId(index);
    const outcome = state.commands.get(commandId)?.outcome;
    if (outcome === "rejected") return { kind: "done", turns: index, stopped: { index, commandId } };
    if (outcome === undefined) return idle ? { kind: "turn", index, commandId, message } : { kind: "wait", index };
  }
  return idle ? { kind: "done", turns: replay.turns.length } : { kind: "wait", index: replay.turns.length };
}
