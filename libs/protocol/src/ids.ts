import { z } from "zod";

/** A NATS subject token usable as a session id: no dots, wildcards or whitespace. */
export const SESSION_ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;
/** Tool names are subject tokens too, at most 64 characters. */
export const TOOL_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
/** Tool call ids become the last token of `fleet.tool.result.<sid>.<toolCallId>`. */
export const TOOL_CALL_ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;

export const SessionId = z.string().regex(SESSION_ID_PATTERN, "must match ^[A-Za-z0-9_-]{1,128}$");
export type SessionId = z.infer<typeof SessionId>;

export const ToolName = z.string().regex(TOOL_NAME_PATTERN, "must match ^[A-Za-z0-9_-]{1,64}$");
export type ToolName = z.infer<typeof ToolName>;

export const ToolCallId = z.string().regex(TOOL_CALL_ID_PATTERN, "must match ^[A-Za-z0-9_-]{1,128}$");
export type ToolCallId = z.infer<typeof ToolCallId>;

/** Event, command, run and entry ids: UUIDv7 or ULID strings (any non-empty token up to 128 chars is accepted). */
export const EventId = z.string().min(1).max(128);
export type EventId = z.infer<typeof EventId>;

export const isSessionId = (value: unknown): value is SessionId =>
  typeof value === "string" && SESSION_ID_PATTERN.test(value);
export const isToolName = (value: unknown): value is ToolName =>
  typeof value === "string" && TOOL_NAME_PATTERN.test(value);
export const isToolCallId = (value: unknown): value is ToolCallId =>
  typeof value === "string" && TOOL_CALL_ID_PATTERN.test(value);
