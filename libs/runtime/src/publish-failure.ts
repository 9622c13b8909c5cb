// What a JetStream publish that was not stored means: a passing cause (retry with the same msgID) or a final answer.

/** JetStream's "wrong last sequence" (optimistic concurrency) error code. */
export const WRONG_LAST_SEQUENCE = 10071;
/** `code` of a publish no stream answered (the server's 503 "no responders" status). */
export const NO_STREAM = 503;
/** `code` of a publish that got no acknowledgement in time (it may still have been stored). */
export const PUBLISH_TIMEOUT = 408;
/** `code` of a publish that could not be sent or whose connection closed before the ack. */
export const PUBLISH_FAILED = 0;

/**
 * JetStream API codes of a store with no room for a message: the server is past its
 * `max_file_store` / `max_memory_store` (10023 "insufficient resources"), the account is past its
 * JetStream limits (10002 "resource limits exceeded for account"), or no server has room for a
 * stream's data (10047 "insufficient storage resources available"). Nothing was stored.
 */
const STORAGE_FULL_CODES: ReadonlySet<number> = new Set([10023, 10002, 10047]);
/** "JetStream system temporarily unavailable" / "stream not current" style errors seen during elections. */
const ELECTION_CODES: ReadonlySet<number> = new Set([10008, 10074]);

/**
 * Why a publish was not stored, as far as a retry is concerned:
 * - `storage_full`: the server or the account has no room (passes once space is freed);
 * - `unavailable`: no stream answered, or the stream's cluster is electing a leader;
 * - `timeout`: no acknowledgement in time (the message may have been stored);
 * - `connection`: it could not be sent, or the connection closed before the ack;
 * - `rejected`: a final answer (a fence, a bad or oversized message): retrying changes nothing.
 */
export type PublishFailureCause = "storage_full" | "unavailable" | "timeout" | "connection" | "rejected";

/** Classifies a publish failure `code` (a JetStream API `err_code`, NO_STREAM, PUBLISH_TIMEOUT or PUBLISH_FAILED). */
export function publishFailureCause(code: number): PublishFailureCause {
  if (STORAGE_FULL_CODES.has(code)) return "storage_full";
  if (code === NO_STREAM || ELECTION_CODES.has(code)) return "unavailable";
  if (code === PUBLISH_TIMEOUT) return "timeout";
  if (code === PUBLISH_FAILED) return "connection";
  return "rejected";
}

/** Failures worth retrying with the same msgID: a passing cause, nothing final was said about the message. */
export function isTransientPublishFailure(code: number): boolean {
  return publishFailureCause(code) !== "rejected";
}

/**
 * True for an error thrown by nats.js (`js.publish`, a KV write) that says JetStream has no room for
 * the message: its `code` is one of the storage codes above, or, for an error that lost its code
 * (wrapped, re-thrown), its message is the server's description of one.
 */
export function isStorageFullError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null | undefined)?.code;
  if (typeof code === "number") return STORAGE_FULL_CODES.has(code);
  const message = err instanceof Error ? err.message : String(err);
  return /insufficient (storage )?resources|resource limits exceeded for account/i.test(message);
}
