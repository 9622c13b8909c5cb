// Size limits on input: commands, tool arguments and tool results. Each limit is configurable
// through the environment variable named here; the services read the variable, this module only
// compares and words the refusal.

/** Largest payload Fleet puts in one message (NATS default max_payload). */
export const MAX_MESSAGE_BYTES = 1024 * 1024;

/** A byte limit and the setting that changes it. */
export interface SizeLimit {
  readonly bytes: number;
  /** The environment variable that configures it. */
  readonly setting: string;
}

/** Commands (`fleet.cmd.*`), checked where the loop decodes them. Default: the message limit. */
export const DEFAULT_MAX_COMMAND_BYTES = MAX_MESSAGE_BYTES;
export const MAX_COMMAND_BYTES_SETTING = "FLEET_MAX_COMMAND_BYTES";

/** A tool call's `args` as JSON, checked by the tool runner before validation. Default 512 KiB. */
export const DEFAULT_MAX_TOOL_ARGS_BYTES = 512 * 1024;
export const MAX_TOOL_ARGS_BYTES_SETTING = "FLEET_MAX_TOOL_ARGS_BYTES";

/**
 * A tool's final `result` record: larger results are truncated and stored whole in `fleet_blobs`.
 * Default and maximum: the message limit less 16 KiB for headers and framing.
 */
export const DEFAULT_MAX_TOOL_RESULT_BYTES = MAX_MESSAGE_BYTES - 16 * 1024;
export const MAX_TOOL_RESULT_BYTES_SETTING = "FLEET_MAX_TOOL_RESULT_BYTES";

export const commandSizeLimit = (bytes = DEFAULT_MAX_COMMAND_BYTES): SizeLimit => ({
  bytes,
  setting: MAX_COMMAND_BYTES_SETTING,
});
export const toolArgsSizeLimit = (bytes = DEFAULT_MAX_TOOL_ARGS_BYTES): SizeLimit => ({
  bytes,
  setting: MAX_TOOL_ARGS_BYTES_SETTING,
});

/**
 * Undefined when `size` fits the limit, else the refusal:
 * `<what> is <size> bytes; the limit is <limit> (<SETTING>)`.
 */
export function sizeLimitViolation(what: string, size: number, limit: SizeLimit): string | undefined {
  return size > limit.bytes ? `${what} is ${size} bytes; the limit is ${limit.bytes} (${limit.setting})` : undefined;
}

/** UTF-8 byte length of a payload given as bytes or text. */
export function payloadBytes(input: Uint8Array | string): number {
  return typeof input === "string" ? new TextEncoder().encode(input).byteLength : input.byteLength;
}

/**
 * The size check of a command payload, before it is parsed: undefined when it fits, else
 * `command is <n> bytes; the limit is <max> (FLEET_MAX_COMMAND_BYTES)`.
 */
export function checkCommandSize(input: Uint8Array | string, maxBytes = DEFAULT_MAX_COMMAND_BYTES): string | undefined {
  return sizeLimitViolation("command", payloadBytes(input), commandSizeLimit(maxBytes));
}
