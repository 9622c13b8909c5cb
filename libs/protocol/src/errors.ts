import { z } from "zod";

/** Error codes that travel between services (as data, never as classes). */
export const ErrorCode = {
  invalidMessage: "invalid_message",
  versionConflict: "version_conflict",
  llmRateLimited: "llm_rate_limited",
  llmOverloaded: "llm_overloaded",
  llmInvalidRequest: "llm_invalid_request",
  llmAuth: "llm_auth",
  toolNotFound: "tool_not_found",
  toolTimeout: "tool_timeout",
  toolFailed: "tool_failed",
  hookBlocked: "hook_blocked",
  aborted: "aborted",
  internal: "internal",
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export const ErrorInfo = z.object({
  code: z.enum(Object.values(ErrorCode) as [ErrorCode, ...ErrorCode[]]),
  message: z.string(),
  retryable: z.boolean(),
  retryAfterMs: z.number().int().nonnegative().optional(),
});
export type ErrorInfo = z.infer<typeof ErrorInfo>;

/** pi's tool error texts (exact strings; conformance tests match them). */
export const toolErrorText = {
  notFound: (name: string) => `Tool ${name} not found`,
  blocked: "Tool execution was blocked",
  aborted: "Operation aborted",
  runnerLost: (name: string) => `Tool runner lost while executing ${name}`,
  noRunner: (name: string) => `No tool runner picked up the call to ${name}`,
  noLiveRunner: (name: string) => `No live tool runner serves ${name}`,
  deadline: (name: string, ms: number) => `Tool ${name} exceeded its deadline of ${ms} ms`,
  lengthStop: (maxTokens?: number) =>
    `Tool call was not executed: the response hit the output-token limit${maxTokens ? ` (${maxTokens} tokens)` : ""} before the arguments were complete. Re-issue the call with shorter arguments.`,
};

/** Normalises anything thrown into an Error. */
export function ensureError(value: unknown): Error {
  if (value instanceof Error) return value;
  if (typeof value === "string") return new Error(value);
  try {
    return new Error(JSON.stringify(value));
  } catch {
    return new Error(String(value));
  }
}
