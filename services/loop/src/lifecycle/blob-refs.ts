// Which objects of `fleet_blobs` a session's log refers to (tool outputs stored whole, hook
// decisions stored by reference).
import { type FleetEvent, OBJECT_STORES } from "@fleet/protocol";
import { hookOutputPrefix } from "../decide/hook-decision.js";

/** Names of the session's own blobs: tool runners write them under `tool-output/<sessionId>/`. */
export const sessionBlobPrefix = (sessionId: string) => `tool-output/${sessionId}/`;

/**
 * The names of `fleet_blobs` objects that the session's tool results refer to (`BlobRef`s anywhere
 * in a result or its updates, e.g. `details.fullOutput`) and its `hook_decision`s' `outputRef`s,
 * restricted to the session's own prefixes: a fork's copied results refer to its source's blobs,
 * which are not the fork's to remove.
 */
export function sessionBlobNames(sessionId: string, events: Iterable<FleetEvent>): Set<string> {
  const prefix = sessionBlobPrefix(sessionId);
  const hookPrefix = hookOutputPrefix(sessionId);
  const names = new Set<string>();
  const visit = (value: unknown, depth: number): void => {
    if (depth > 32 || value === null || typeof value !== "object") return;
    if (Array.isArray(value)) {
      for (const v of value) visit(v, depth + 1);
      return;
    }
    const record = value as Record<string, unknown>;
    if (record.bucket === OBJECT_STORES.blobs.name && typeof record.name === "string") {
      if (record.name.startsWith(prefix)) names.add(record.name);
      return;
    }
    for (const v of Object.values(record)) visit(v, depth + 1);
  };
  for (const event of events) {
    if (event.type === "tool_execution_end") visit(event.result, 0);
    else if (event.type === "tool_execution_update") visit(event.partialResult, 0);
    else if (event.type === "message_end" && event.message.role === "toolResult") visit(event.message.details, 0);
    else if (event.type === "hook_decision" && event.outputRef?.name.startsWith(hookPrefix))
      names.add(event.outputRef.name);
  }
  return names;
}
