import { describe, expect, it } from "vitest";
import { decodeCommand, encodeCommand } from "./codec.js";
import { checkCommandSize, DEFAULT_MAX_COMMAND_BYTES, sizeLimitViolation, toolArgsSizeLimit } from "./size-limits.js";

/** A valid prompt command of exactly `bytes` bytes of JSON. */
function promptOfSize(bytes: number): Uint8Array {
  const frame = JSON.stringify({ type: "prompt", id: "c-1", sessionId: "s-1", text: "" });
  const encoded = encodeCommand({
    type: "prompt",
    id: "c-1",
    sessionId: "s-1",
    text: "x".repeat(bytes - frame.length),
  });
  if (!encoded.ok) throw new Error(encoded.error);
  return encoded.bytes;
}

describe("size limits", () => {
  it("a command at the limit passes; one byte more is refused, naming the limit and its setting", () => {
    expect(checkCommandSize(new Uint8Array(DEFAULT_MAX_COMMAND_BYTES))).toBeUndefined();
    expect(checkCommandSize(new Uint8Array(DEFAULT_MAX_COMMAND_BYTES + 1))).toBe(
      "command is 1048577 bytes; the limit is 1048576 (FLEET_MAX_COMMAND_BYTES)",
    );
  });

  it("counts UTF-8 bytes of text, not characters", () => {
    expect(checkCommandSize("é".repeat(3), 5)).toBe("command is 6 bytes; the limit is 5 (FLEET_MAX_COMMAND_BYTES)");
    expect(checkCommandSize("é".repeat(3), 6)).toBeUndefined();
  });

  it("decodeCommand rejects an oversize command as invalid before parsing it", () => {
    const command = promptOfSize(2_000);
    expect(command.byteLength).toBe(2_000);
    expect(decodeCommand(command, { maxBytes: 2_000 })).toMatchObject({ ok: true, value: { type: "prompt" } });
    expect(decodeCommand(command, { maxBytes: 1_999 })).toEqual({
      ok: false,
      code: "invalid",
      error: "command is 2000 bytes; the limit is 1999 (FLEET_MAX_COMMAND_BYTES)",
      issues: [{ path: "", message: "command is 2000 bytes; the limit is 1999 (FLEET_MAX_COMMAND_BYTES)" }],
      commandType: "unknown",
    });
  });

  it("decodeCommand applies the default limit when none is given", () => {
    const over = `{"type":"prompt","id":"c-1","sessionId":"s-1","text":"${"x".repeat(DEFAULT_MAX_COMMAND_BYTES)}"}`;
    expect(decodeCommand(over)).toMatchObject({
      ok: false,
      code: "invalid",
      error: `command is ${over.length} bytes; the limit is 1048576 (FLEET_MAX_COMMAND_BYTES)`,
    });
  });

  it("words tool-argument refusals the same way", () => {
    expect(sizeLimitViolation("the arguments JSON of tool write", 524_289, toolArgsSizeLimit())).toBe(
      "the arguments JSON of tool write is 524289 bytes; the limit is 524288 (FLEET_MAX_TOOL_ARGS_BYTES)",
    );
    expect(sizeLimitViolation("the arguments JSON of tool write", 524_288, toolArgsSizeLimit())).toBeUndefined();
  });
});
