import type { z } from "zod";
import { COMMAND_TYPES, CommandEnvelope, FleetCommand } from "./commands.js";
import { FleetEvent } from "./events.js";
import { CommandBodyRef } from "./input-blobs.js";
import { checkCommandSize, DEFAULT_MAX_COMMAND_BYTES, MAX_MESSAGE_BYTES, payloadBytes } from "./size-limits.js";
import { RunnerPresence, ToolCallRequest, ToolRegistration, ToolResultRecord } from "./tool-records.js";

export interface DecodeIssue {
  /** Dotted path into the payload (`message.content.0.text`), or `""` for the root. */
  path: string;
  message: string;
}

/** Contract: decoders never throw on bad input; they return `ok: false` with every issue. */
export type Decoded<T> = { ok: true; value: T } | { ok: false; error: string; issues: DecodeIssue[] };

export type Encoded = { ok: true; bytes: Uint8Array } | { ok: false; error: string; issues: DecodeIssue[] };

const textDecoder = new TextDecoder("utf-8", { fatal: true });
const textEncoder = new TextEncoder();
/**
 * UTF-8 bytes of a string: under Node a `Buffer` (a `Uint8Array`; below 4 KiB it is a slice of a
 * shared pool, where `TextEncoder` gives every message its own backing store, which the garbage
 * collector then frees one by one), elsewhere `TextEncoder`. The bytes are the same.
 */
const utf8Bytes: (text: string) => Uint8Array = (() => {
  const NodeBuffer = (globalThis as { Buffer?: { from(text: string, encoding: "utf8"): Uint8Array } }).Buffer;
  return NodeBuffer ? (text) => NodeBuffer.from(text, "utf8") : (text) => textEncoder.encode(text);
})();

export function formatIssues(issues: readonly z.core.$ZodIssue[]): DecodeIssue[] {
  return issues.map((issue) => ({ path: issue.path.map(String).join("."), message: issue.message }));
}

const describe = (issues: DecodeIssue[]) =>
  issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join("; ");

/** Parses bytes or text as JSON. Fails on invalid UTF-8, invalid JSON and oversize input. */
export function parseJson(input: Uint8Array | string, maxBytes = MAX_MESSAGE_BYTES): Decoded<unknown> {
  const size = payloadBytes(input);
  if (size > maxBytes) return fail("", `payload of ${size} bytes exceeds the limit of ${maxBytes} bytes`);
  let text: string;
  try {
    text = typeof input === "string" ? input : textDecoder.decode(input);
  } catch {
    return fail("", "payload is not valid UTF-8");
  }
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (err) {
    return fail("", `not JSON: ${(err as Error).message}`);
  }
}

function fail(path: string, message: string): { ok: false; error: string; issues: DecodeIssue[] } {
  const issues = [{ path, message }];
  return { ok: false, error: describe(issues), issues };
}

/** Validates an already-parsed value against a schema, with the same error shape as the decoders. */
export function validate<S extends z.ZodType>(schema: S, value: unknown): Decoded<z.infer<S>> {
  const result = schema.safeParse(value);
  if (result.success) return { ok: true, value: result.data };
  const issues = formatIssues(result.error.issues);
  return { ok: false, error: describe(issues), issues };
}

/** Builds `decodeX(bytes|string)` for a schema. */
export function decoderFor<S extends z.ZodType>(schema: S) {
  return (input: Uint8Array | string): Decoded<z.infer<S>> => {
    const json = parseJson(input);
    return json.ok ? validate(schema, json.value) : json;
  };
}

/** Builds `encodeX(value)`: validates, serialises, and enforces the message size limit. */
export function encoderFor<S extends z.ZodType>(schema: S) {
  return (value: z.input<S>): Encoded => {
    const checked = validate(schema, value);
    return checked.ok ? serialise(checked.value) : checked;
  };
}

/** Serialises with the message size limit; no schema check. */
function serialise(value: unknown): Encoded {
  let json: string;
  try {
    json = JSON.stringify(value);
  } catch (err) {
    // A value nested deeper than the call stack allows (RangeError): bad input, not a crash.
    return fail("", `cannot encode the value: ${(err as Error).message}`);
  }
  const bytes = utf8Bytes(json);
  if (bytes.byteLength > MAX_MESSAGE_BYTES) {
    return fail("", `encoded size ${bytes.byteLength} bytes exceeds the limit of ${MAX_MESSAGE_BYTES} bytes`);
  }
  return { ok: true, bytes };
}

export const decodeEvent = decoderFor(FleetEvent);
export const encodeEvent = encoderFor(FleetEvent);
/**
 * `encodeEvent` without the schema check, for an event its writer built from values that were
 * validated where they entered (commands, tool results, provider output, hook replies) and that the
 * `FleetEvent` type already constrains: serialised with the same size limit. Readers still decode
 * every event with `decodeEvent`.
 */
export const encodeBuiltEvent = (event: FleetEvent): Encoded => serialise(event);
export const decodeToolCallRequest = decoderFor(ToolCallRequest);
export const encodeToolCallRequest = encoderFor(ToolCallRequest);
export const decodeToolResultRecord = decoderFor(ToolResultRecord);
export const encodeToolResultRecord = encoderFor(ToolResultRecord);
export const decodeToolRegistration = decoderFor(ToolRegistration);
export const encodeToolRegistration = encoderFor(ToolRegistration);
export const decodeRunnerPresence = decoderFor(RunnerPresence);
export const encodeCommand = encoderFor(FleetCommand);

export type CommandDecoded =
  | { ok: true; value: FleetCommand }
  | {
      ok: false;
      code: "invalid" | "unsupported";
      error: string;
      issues: DecodeIssue[];
      /** What could be read of the envelope, for the rejection event. */
      commandId?: string;
      commandType: string;
    };

/**
 * Decodes a command. `unsupported` = well-formed envelope of an unknown type; `invalid` = anything
 * else that fails (over `maxBytes`, checked before parsing; not JSON, wrong types, schema
 * violations). `maxBytes` is FLEET_MAX_COMMAND_BYTES (default 1 MiB).
 */
export function decodeCommand(input: Uint8Array | string, opts: { maxBytes?: number } = {}): CommandDecoded {
  const oversize = checkCommandSize(input, opts.maxBytes ?? DEFAULT_MAX_COMMAND_BYTES);
  if (oversize) {
    return {
      ok: false,
      code: "invalid",
      error: oversize,
      issues: [{ path: "", message: oversize }],
      commandType: "unknown",
    };
  }
  const json = parseJson(input, Math.max(MAX_MESSAGE_BYTES, opts.maxBytes ?? DEFAULT_MAX_COMMAND_BYTES));
  if (!json.ok) return { ...json, code: "invalid", commandType: "unknown" };
  const envelope = CommandEnvelope.safeParse(json.value);
  const raw = json.value as { type?: unknown; id?: unknown };
  const commandType = typeof raw?.type === "string" ? raw.type : "unknown";
  const commandId = typeof raw?.id === "string" && raw.id.length > 0 ? raw.id : undefined;
  if (envelope.success && !(COMMAND_TYPES as string[]).includes(envelope.data.type)) {
    const error = `unsupported command type ${JSON.stringify(envelope.data.type)}`;
    return {
      ok: false,
      code: "unsupported",
      error,
      issues: [{ path: "type", message: error }],
      commandId,
      commandType,
    };
  }
  const checked = validate(FleetCommand, json.value);
  if (checked.ok) return checked;
  return { ...checked, code: "invalid", ...(commandId ? { commandId } : {}), commandType };
}

/**
 * The envelope of a command by reference (`{type, id, sessionId, ts?, bodyRef}`, see input-blobs.ts)
 * when the payload has a `bodyRef`: decoded, or why it is not a valid one. Undefined for any other
 * payload (decode it with `decodeCommand`).
 */
export function decodeCommandBodyRef(input: Uint8Array | string): Decoded<CommandBodyRef> | undefined {
  const json = parseJson(input);
  if (!json.ok || typeof json.value !== "object" || json.value === null || !("bodyRef" in json.value)) return undefined;
  return validate(CommandBodyRef, json.value);
}
