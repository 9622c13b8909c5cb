// Webhook signatures and retry delays (pure apart from the HMAC).
import { createHmac, timingSafeEqual } from "node:crypto";

/** Header with `sha256=<hex HMAC-SHA256 of the raw body, keyed by the webhook's secret>`. */
export const SIGNATURE_HEADER = "fleet-signature";
/** Header with the event's stream sequence: the same for every retry of a delivery. */
export const IDEMPOTENCY_HEADER = "idempotency-key";

export const signBody = (secret: string, body: string): string =>
  `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;

/** For receivers: does `header` sign `body` with `secret`? Constant-time comparison. */
export function verifySignature(secret: string, body: string, header: string | undefined): boolean {
  if (!header) return false;
  const expected = Buffer.from(signBody(secret, body));
  const given = Buffer.from(header);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/** Delay before the next attempt after `attempt` failed ones: base·2^(attempt-1), capped at `maxMs`. */
export const retryDelayMs = (attempt: number, baseMs: number, maxMs: number): number =>
  Math.min(maxMs, baseMs * 2 ** Math.min(30, Math.max(0, attempt - 1)));
