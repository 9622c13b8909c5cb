import { APIError } from "@anthropic-ai/sdk";

/**
 * The `errorMessage` for a failed call: for API errors `"<status> <error type>: <API message>"`
 * (e.g. `400 invalid_request_error: max_tokens: Field required`), without the status for SSE `error`
 * events in mid-stream (`overloaded_error: Overloaded`); otherwise the error's own message, followed by
 * its cause's (`Connection error.: connect ECONNREFUSED …`).
 * Never includes request headers, so the API key cannot leak into it.
 */
export function describeAnthropicError(error: unknown): string {
  if (error instanceof APIError && error.apiMessage !== null) {
    const head = [error.status, error.type === null ? undefined : `${error.type}:`].filter(
      (part) => part !== undefined,
    );
    return [...head, error.apiMessage].join(" ");
  }
  if (error instanceof Error) {
    const text = error.message || error.name;
    const cause = error.cause instanceof Error ? error.cause.message : undefined;
    return cause && cause !== text ? `${text}: ${cause}` : text;
  }
  return typeof error === "string" ? error : `Unknown error: ${String(error)}`;
}
