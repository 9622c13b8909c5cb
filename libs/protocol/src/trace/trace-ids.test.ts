import { describe, expect, it } from "vitest";
import { derivedSpanId, derivedTraceId } from "./trace-ids.js";

/** FNV-1a 64 with 64-bit integers: the definition the ids follow. */
function fnvReference(input: string): string {
  let hash = 0xcbf29ce484222325n;
  for (const byte of new TextEncoder().encode(input)) {
    hash ^= BigInt(byte);
    hash = (hash * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return hash.toString(16).padStart(16, "0");
}

describe("derived trace ids", () => {
  it("are FNV-1a 64 of the run (and key), as 64-bit integers give it", () => {
    const runIds = ["", "r", "019ad16a-5c80-7408-99e4-d673a230b19a", "é✓𝄞", "x".repeat(300)];
    for (const runId of runIds) {
      expect(derivedTraceId(runId)).toBe(
        fnvReference(`fleet-trace:a:${runId}`) + fnvReference(`fleet-trace:b:${runId}`),
      );
      for (const key of ["invoke_agent", "chat:1", "tool:call_1"]) {
        expect(derivedSpanId(runId, key)).toBe(fnvReference(`fleet-span:${runId}:${key}`));
      }
    }
    // Known vectors of FNV-1a 64.
    expect(fnvReference("")).toBe("cbf29ce484222325");
    expect(fnvReference("a")).toBe("af63dc4c8601ec8c");
  });
});
