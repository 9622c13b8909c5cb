// A run that an accepted command began in the log but that never started.
import { runCursorOf, type SessionState } from "@fleet/protocol";
import type { Effect } from "./decision.js";

/**
 * The run of an accepted run-starting command whose `agent_start` is not in the log (its worker was
 * cut between the acceptance and the run), decided from the log alone: a `continue`, or a prompt
 * run with the messages the acceptance logged (`command_accepted.messages`, change 31). Undefined
 * when no such run is pending, or when the log predates those messages (then only the command's
 * redelivery can start it).
 */
export function unstartedRun(state: SessionState): Extract<Effect, { type: "start_run" }> | undefined {
  const cursor = runCursorOf(state);
  const trigger = cursor.kind === "idle" ? cursor.pendingTrigger : null;
  if (!trigger) return undefined;
  if (trigger.commandType === "continue") return { type: "start_run", kind: "continue" };
  return trigger.messages ? { type: "start_run", kind: "prompt", messages: trigger.messages } : undefined;
}
