// pi's refusals of a run request (`prompt()` while busy, `continue()`'s decision table), as data.
// Shared by the command decider (`decide/`) and the run driver (`engine/`); pure.
import type { ContextMessage, MessageQueues } from "@fleet/protocol";

/** pi's error texts for the public API (exact; conformance tests match them). */
export const ENGINE_ERROR_TEXT = {
  promptBusy:
    "Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion.",
  continueBusy: "Agent is already processing. Wait for completion before continuing.",
  noMessages: "No messages to continue from",
  assistantTail: "Cannot continue from message role: assistant",
  busy: "Agent is already processing.",
} as const;

/** A refused request, as data (the service turns it into `command_rejected`). */
export interface Rejection {
  status: "rejected";
  code: "busy" | "conflict";
  reason: string;
}

export const rejected = (code: Rejection["code"], reason: string): Rejection => ({ status: "rejected", code, reason });

/** pi's `continue()` refusals, from the context and the queues. */
export function continueRefusal(messages: readonly ContextMessage[], queues: MessageQueues): Rejection | undefined {
  const last = messages.at(-1);
  if (!last) return rejected("conflict", ENGINE_ERROR_TEXT.noMessages);
  if (last.role === "assistant" && queues.steer.length === 0 && queues.followUp.length === 0) {
    return rejected("conflict", ENGINE_ERROR_TEXT.assistantTail);
  }
  return undefined;
}
