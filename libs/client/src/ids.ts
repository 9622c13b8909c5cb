// Id minting for commands and sessions (the client is an imperative shell: it may read the clock).
import { randomBytes } from "node:crypto";

export { newId } from "@fleet/runtime";

/**
 * A short session id, `s-<time base36><8 random base36 chars>`: sortable by creation time and
 * a valid NATS subject token (`^[A-Za-z0-9_-]{1,128}$`).
 */
export function newSessionId(now: number = Date.now()): string {
  const random = [...randomBytes(8)].map((b) => (b % 36).toString(36)).join("");
  return `s-${now.toString(36)}${random}`;
}
