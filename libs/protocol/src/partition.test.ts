import { describe, expect, it } from "vitest";
import { DEFAULT_PARTITIONS, fnv1a32, partitionOf } from "./partition.js";

// Known answers: the first three from the FNV reference, the others computed independently
// (Python: h = 0x811c9dc5; for b in s.encode(): h = ((h ^ b) * 0x01000193) & 0xffffffff).
describe("fnv1a32", () => {
  it("matches known answers", () => {
    expect(fnv1a32("")).toBe(0x811c9dc5);
    expect(fnv1a32("a")).toBe(0xe40c292c);
    expect(fnv1a32("foobar")).toBe(0xbf9cf968);
    expect(fnv1a32("s-1")).toBe(0x189bada4);
    expect(fnv1a32("session-42")).toBe(0xad524554);
  });

  it("hashes the UTF-8 bytes, not UTF-16 code units", () => {
    expect(fnv1a32("héllo")).toBe(0x4aa48540);
    expect(fnv1a32("日本")).toBe(0x9f26ee51);
  });

  it("is an unsigned 32-bit integer", () => {
    for (const s of ["", "a", "zzzzzzzz", "日本"]) {
      const h = fnv1a32(s);
      expect(Number.isInteger(h) && h >= 0 && h <= 0xffffffff).toBe(true);
    }
  });
});

describe("partitionOf", () => {
  it("is fnv1a32 modulo P", () => {
    expect(DEFAULT_PARTITIONS).toBe(16);
    expect(partitionOf("", 16)).toBe(5);
    expect(partitionOf("a", 16)).toBe(12);
    expect(partitionOf("foobar", 16)).toBe(8);
    expect(partitionOf("s-1", 16)).toBe(4);
    expect(partitionOf("session-42", 7)).toBe(4);
    expect(partitionOf("anything", 1)).toBe(0);
  });

  it("refuses a partition count that is not a positive integer", () => {
    for (const p of [0, -1, 1.5, Number.NaN]) {
      expect(() => partitionOf("s-1", p)).toThrow("partitions must be a positive integer");
    }
  });
});
