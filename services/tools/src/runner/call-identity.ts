import { isSessionId, isToolCallId, parseJson } from "@fleet/protocol";
import type { CallId } from "./call-records.js";

/**
 * Session and call ids of an otherwise invalid request, when they are readable (so the invalid
 * request can still be answered); null when the bytes are not JSON or the ids are not valid tokens.
 */
export function readCallIdentity(data: Uint8Array): CallId | null {
  const json = parseJson(data);
  if (!json.ok || typeof json.value !== "object" || json.value === null) return null;
  const { sessionId, toolCallId } = json.value as { sessionId?: unknown; toolCallId?: unknown };
  return isSessionId(sessionId) && isToolCallId(toolCallId) ? { sessionId, toolCallId } : null;
}
