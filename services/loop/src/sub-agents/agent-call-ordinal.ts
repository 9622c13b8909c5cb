// Where an `agent` call stands among the `agent` calls of its assistant message (the fan-out limit).
import { AGENT_TOOL_NAME, type SessionEntry } from "@fleet/protocol";

/**
 * The call's index among the `agent` calls of the last assistant message (the batch being run:
 * its toolResult messages come after every call settled), from 0; 0 when that message lacks it.
 */
export function agentCallOrdinal(entries: readonly SessionEntry[], toolCallId: string): number {
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i];
    if (entry?.type !== "message" || entry.message.role !== "assistant") continue;
    let ordinal = 0;
    for (const block of entry.message.content) {
      if (block.type !== "toolCall") continue;
      if (block.id === toolCallId) return ordinal;
      if (block.name === AGENT_TOOL_NAME) ordinal++;
    }
    return 0;
  }
  return 0;
}

/** How many `agent` calls the last assistant message holding `toolCallId` has (1 when none is found). */
export function agentCallsInBatch(entries: readonly SessionEntry[], toolCallId: string): number {
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i];
    if (entry?.type !== "message" || entry.message.role !== "assistant") continue;
    const calls = entry.message.content.filter((b) => b.type === "toolCall");
    if (!calls.some((b) => b.id === toolCallId)) return 1;
    return Math.max(1, calls.filter((b) => b.name === AGENT_TOOL_NAME).length);
  }
  return 1;
}
