// Stream tickets: short-lived, signed permissions to read one session's events, for clients that
// cannot send an `Authorization` header (a browser's EventSource). Pure apart from the HMAC.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { z } from "zod";

/** Smallest `FLEET_GATEWAY_TICKET_KEY`: 32 characters (256 bits of a random secret, written out). */
export const MIN_TICKET_KEY_CHARS = 32;

/**
 * The HMAC key of tickets: `FLEET_GATEWAY_TICKET_KEY` when set (every gateway behind one address
 * must have the same), else 32 random bytes made at start (tickets are then good on this process only).
 */
export function ticketKeyOf(configured: string | undefined): Buffer {
  return configured ? Buffer.from(configured, "utf8") : randomBytes(32);
}

/** What a ticket grants: reading the events of `sessionId` as `tenant`, until `expiresAt`. */
export interface TicketClaims {
  tenant: string;
  sessionId: string;
  /** ms since the epoch. */
  expiresAt: number;
}

const Payload = z.object({ t: z.string(), s: z.string(), x: z.number().int(), n: z.string() }).strict();

const VERSION = "v1";

const sign = (key: Buffer, payload: string) => createHmac("sha256", key).update(`${VERSION}.${payload}`).digest();

/** `v1.<payload, base64url JSON>.<HMAC-SHA256 of "v1.<payload>", base64url>`; a nonce makes each one unique. */
export function issueTicket(claims: TicketClaims, key: Buffer, nonce = randomBytes(9).toString("base64url")): string {
  const payload = Buffer.from(
    JSON.stringify({ t: claims.tenant, s: claims.sessionId, x: claims.expiresAt, n: nonce }),
  ).toString("base64url");
  return `${VERSION}.${payload}.${sign(key, payload).toString("base64url")}`;
}

/**
 * The tenant a ticket grants `sessionId`'s events to at `now`, or why it does not: malformed, not
 * signed with `key` (another gateway's key, or altered), expired, or for another session.
 */
export function verifyTicket(
  ticket: string,
  key: Buffer,
  sessionId: string,
  now: number,
): { ok: true; tenant: string } | { ok: false; reason: string } {
  const [version, payload, signature, extra] = ticket.split(".");
  if (version !== VERSION || !payload || !signature || extra !== undefined) {
    return { ok: false, reason: "the ticket is malformed" };
  }
  const given = Buffer.from(signature, "base64url");
  const expected = sign(key, payload);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return { ok: false, reason: "the ticket's signature is not this gateway's" };
  }
  let claims: z.infer<typeof Payload>;
  try {
    const parsed = Payload.safeParse(JSON.parse(Buffer.from(payload, "base64url").toString("utf8")));
    if (!parsed.success) return { ok: false, reason: "the ticket is malformed" };
    claims = parsed.data;
  } catch {
    return { ok: false, reason: "the ticket is malformed" };
  }
  if (claims.x <= now) return { ok: false, reason: "the ticket has expired; ask for a new one" };
  if (claims.s !== sessionId) return { ok: false, reason: "the ticket is for another session" };
  return { ok: true, tenant: claims.t };
}
