// Errors the SDK throws. Callers classify them by `kind` (a field), never by `instanceof` alone.
import type { RejectionCode, StoreErrorCode } from "@fleet/protocol";

export type FleetErrorKind =
  /** The loop answered with `command_rejected`; `code` is the rejection code. */
  | "rejected"
  /** A session-store query answered `{ok: false}`; `code` is the store's code. */
  | "store"
  /** No outcome or reply arrived in time. */
  | "timeout"
  /**
   * A server or service could not be reached (NATS down, no store responders, stack not set up), or
   * JetStream refused a write because its storage is full (code `storage_full`).
   */
  | "unavailable"
  /** The caller passed something the protocol does not accept (checked before sending). */
  | "invalid_input"
  /** A peer sent something that does not match the protocol. */
  | "protocol";

/** Base of every SDK error. `code` is a stable machine-readable string; `message` is one line. */
export class FleetError extends Error {
  readonly kind: FleetErrorKind;
  readonly code: string;
  constructor(kind: FleetErrorKind, code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "FleetError";
    this.kind = kind;
    this.code = code;
  }
}

/** A command ended in `command_rejected`: `code` and `reason` are copied from that event. */
export class CommandRejectedError extends FleetError {
  readonly reason: string;
  readonly commandId: string;
  readonly commandType: string;
  readonly sessionId: string;
  /** Stream sequence of the `command_rejected` event. */
  readonly seq: number;
  constructor(args: {
    code: RejectionCode;
    reason: string;
    commandId: string;
    commandType: string;
    sessionId: string;
    seq: number;
  }) {
    super("rejected", args.code, `${args.commandType} rejected (${args.code}): ${args.reason}`);
    this.name = "CommandRejectedError";
    this.reason = args.reason;
    this.commandId = args.commandId;
    this.commandType = args.commandType;
    this.sessionId = args.sessionId;
    this.seq = args.seq;
  }
}

/** A session-store query answered `{ok: false, code, error}`. */
export class StoreQueryError extends FleetError {
  readonly op: string;
  constructor(op: string, code: Exclude<StoreErrorCode, "unavailable">, error: string) {
    super("store", code, `${op}: ${error}`);
    this.name = "StoreQueryError";
    this.op = op;
  }
}

/**
 * A write that JetStream refused because its storage is full (the server's `max_file_store` or the
 * account's limit): kind `unavailable`, code `storage_full`. Nothing was stored; the same write (the
 * same command id) may be sent again once space is freed.
 */
export function storageFullError(what: string, cause: unknown): FleetError {
  const detail = cause instanceof Error ? cause.message : String(cause);
  return new FleetError(
    "unavailable",
    "storage_full",
    `cannot ${what}: the event store is full (storage_full; JetStream: ${detail}). Nothing was stored; send it again once space is freed (fleet doctor shows the storage)`,
    { cause },
  );
}

/** Structural check, so errors from another copy of this package are recognised too. */
export function isFleetError(value: unknown): value is FleetError {
  return (
    value instanceof Error &&
    typeof (value as { kind?: unknown }).kind === "string" &&
    typeof (value as { code?: unknown }).code === "string"
  );
}
