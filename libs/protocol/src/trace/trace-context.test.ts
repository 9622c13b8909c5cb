import { describe, expect, it } from "vitest";
import { FleetCommand } from "../commands.js";
import { formatTraceparent, parseTraceparent, traceFieldsOf } from "./trace-context.js";

const VALID = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

describe("trace / W3C trace context", () => {
  it("parses and formats a version-00 traceparent", () => {
    expect(parseTraceparent(VALID)).toEqual({
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      spanId: "00f067aa0ba902b7",
      flags: 1,
    });
    expect(formatTraceparent(parseTraceparent(VALID)!)).toBe(VALID);
  });

  it("refuses all-zero ids, other versions and malformed values", () => {
    for (const bad of [
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
      "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
      "garbage",
    ]) {
      expect(parseTraceparent(bad)).toBeUndefined();
    }
  });

  it("drops an invalid header with its tracestate, as a receiver must", () => {
    expect(traceFieldsOf(VALID.toUpperCase(), " k=v ")).toEqual({ traceparent: VALID, tracestate: "k=v" });
    expect(traceFieldsOf("00-nope", "k=v")).toEqual({});
    expect(traceFieldsOf(undefined, undefined)).toEqual({});
  });

  it("is an optional command field; a command with a malformed one does not decode", () => {
    const prompt = { type: "prompt", id: "c-1", sessionId: "s-1", text: "hi" };
    expect(FleetCommand.safeParse({ ...prompt, traceparent: VALID, tracestate: "k=v" }).success).toBe(true);
    expect(FleetCommand.safeParse({ ...prompt, traceparent: "00-nope" }).success).toBe(false);
  });
});
