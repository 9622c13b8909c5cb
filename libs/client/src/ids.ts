// Id minting for commands and sessions (the client is an imperative shell: it may read the clock).
import { randomBytes } from "node:crypto";

/** A UUIDv7 string: 48-bit Unix ms timestamp, version 7, RFC 4122 variant, 74 random bits. */
export function newId(now: number = Date.now()): string {
  const bytes = randomBytes(16);
  bytes.writeUIntBE(now, 0, 6);
  bytes[6] = ((bytes[6] as number) & 0x0f) | 0x70;
  bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80;
  const h = bytes.toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/**
 * A short session id, `s-<time base36><8 random base36 chars>`: sortable by creation time and
 * a valid NATS subject token (`^[A-Za-z0-9_-]{1,128}$`).
 */
export function newSessionId(now: number = Date.now()): string {
  const random = [...randomBytes(8)].map((b) => (b % 36).toString(36)).join("");
  return `s-${now.toString(36)}${random}`;
}
