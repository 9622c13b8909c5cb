// HTTP errors as data: every error answer is `{error: {code, message}}` with one of these statuses.
import { isFleetError } from "@fleet/client";
import { z } from "zod";

/** The body of every error answer. */
export const ErrorBody = z.object({
  error: z.object({
    /** Stable machine-readable code (`invalid`, `unauthorized`, `forbidden`, `not_found`, …). */
    code: z.string(),
    /** One human-readable line. */
    message: z.string(),
  }),
});
export type ErrorBody = z.infer<typeof ErrorBody>;

/** An error answer: status, code and message. */
export interface ApiError {
  status: number;
  code: string;
  message: string;
}

export const apiError = (status: number, code: string, message: string): ApiError => ({ status, code, message });

export const isApiError = (value: unknown): value is ApiError =>
  typeof value === "object" &&
  value !== null &&
  typeof (value as ApiError).status === "number" &&
  typeof (value as ApiError).code === "string" &&
  typeof (value as ApiError).message === "string" &&
  !(value instanceof Error);

/** The longest `message` an error answer carries: an error never echoes more of the input than this. */
export const MAX_ERROR_MESSAGE_CHARS = 500;

/** `text` cut to `max` characters, saying how much was left out. */
export function excerpt(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}

export const errorBody = (e: ApiError): ErrorBody => ({
  error: { code: e.code, message: excerpt(e.message, MAX_ERROR_MESSAGE_CHARS) },
});

/** HTTP status of a rejection code (`command_rejected.code`). */
export function rejectionStatus(code: string): number {
  switch (code) {
    case "invalid":
    case "unsupported":
      return 400;
    case "not_found":
      return 404;
    default:
      return 409;
  }
}

/**
 * Maps what the SDK throws to an answer: a NATS permission the tenant's login lacks → 403,
 * unreachable NATS or no session store → 503 `unavailable`, a write JetStream refused because its
 * storage is full → 503 `storage_full`, a store `not_found` → 404, bad input → 400, a timeout → 504.
 * Anything else is a bug (500).
 */
export function toApiError(err: unknown): ApiError {
  if (isApiError(err)) return err;
  if (isFleetError(err)) {
    switch (err.kind) {
      case "unavailable":
        // The tenant's NATS login may not do this (e.g. no operator rights for the budget).
        if (err.code === "permission") return apiError(403, "forbidden", err.message);
        if (err.code === "storage_full") return apiError(503, "storage_full", err.message);
        return apiError(503, "unavailable", err.message);
      case "invalid_input":
        return apiError(400, "invalid", err.message);
      case "timeout":
        return apiError(504, "timeout", err.message);
      case "store":
        return err.code === "not_found"
          ? apiError(404, "not_found", err.message)
          : err.code === "invalid"
            ? apiError(400, "invalid", err.message)
            : apiError(504, "timeout", err.message);
      case "rejected":
        return apiError(rejectionStatus(err.code), err.code, err.message);
      case "protocol":
        return apiError(502, "protocol", err.message);
    }
  }
  return apiError(500, "internal", "internal error");
}
