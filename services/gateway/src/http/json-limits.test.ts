import { describe, expect, it } from "vitest";
import { JSON_LIMITS, jsonLimitViolation } from "./json-limits.js";

const MAX_JSON_DEPTH = JSON_LIMITS.maxDepth;
const depthOnly = (maxDepth: number) => ({ maxDepth, maxValues: Number.POSITIVE_INFINITY });
const jsonDepthViolation = (text: string, maxDepth: number, opts?: { lines?: boolean }) =>
  jsonLimitViolation(text, depthOnly(maxDepth), opts);

const nested = (depth: number, open = "[", close = "]") => `${open.repeat(depth)}${close.repeat(depth)}`;

describe("gateway / JSON limits", () => {
  it("refuses more values in arrays and objects than the limit, outside strings, per JSONL line", () => {
    const limits = { maxDepth: 64, maxValues: 5 };
    expect(jsonLimitViolation("[1,2,3,4]", limits)).toBeUndefined();
    expect(jsonLimitViolation('{"a":[1,2],"b":{"c":3}}', limits)).toBeUndefined();
    expect(jsonLimitViolation("[1,2,3,4,5,6]", limits)).toMatch(/more than 5 values/);
    expect(jsonLimitViolation('["a,b,c,d,e,f,g"]', limits)).toBeUndefined();
    expect(jsonLimitViolation("[1,2,3]\n[4,5,6]\n[7,8,9]", limits, { lines: true })).toBeUndefined();
    expect(jsonLimitViolation("[1,2,3]\n[4,5,6]\n[7,8,9]", limits)).toMatch(/more than 5/);
    expect(jsonLimitViolation(`[${"0,".repeat(100_000)}0]`, JSON_LIMITS)).toMatch(/100000 values/);
    expect(jsonLimitViolation(`[${"0,".repeat(90_000)}0]`, JSON_LIMITS)).toBeUndefined();
  });

  it("allows nesting up to the limit and refuses one level more, naming the limit", () => {
    expect(jsonDepthViolation(nested(MAX_JSON_DEPTH), MAX_JSON_DEPTH)).toBeUndefined();
    expect(jsonDepthViolation(nested(MAX_JSON_DEPTH + 1), MAX_JSON_DEPTH)).toMatch(/deeper than 64 levels/);
    const objects = `${'{"a":'.repeat(65)}1${"}".repeat(65)}`;
    expect(jsonDepthViolation(objects, 64)).toMatch(/64/);
    expect(jsonDepthViolation(`{"a":[{"b":[1,2,{"c":{}}]}],"d":[[]]}`, 6)).toBeUndefined();
    expect(jsonDepthViolation(`{"a":[{"b":[1,2,{"c":{}}]}],"d":[[]]}`, 5)).toBeDefined();
  });

  it("does not count brackets inside strings, escaped quotes included", () => {
    const inString = JSON.stringify({ text: `${"[".repeat(10_000)}"\\${"{".repeat(10_000)}` });
    expect(jsonDepthViolation(inString, 2)).toBeUndefined();
    expect(jsonDepthViolation(`["\\\\", [[]]]`, 3)).toBeUndefined();
    expect(jsonDepthViolation(`["\\\\", [[[]]]]`, 3)).toBeDefined();
  });

  it("scans a 100,000-deep input without recursion, in linear time", () => {
    const started = performance.now();
    expect(jsonDepthViolation(nested(100_000), 64)).toBeDefined();
    expect(jsonDepthViolation(`[${"0,".repeat(2_000_000)}0]`, 64)).toBeUndefined();
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it("JSONL: every line starts at depth 0, and a line break ends an unterminated string", () => {
    const lines = Array.from({ length: 100 }, () => nested(60)).join("\n");
    expect(jsonDepthViolation(lines, 64, { lines: true })).toBeUndefined();
    expect(jsonDepthViolation(lines, 64)).toBeUndefined();
    expect(jsonDepthViolation(`[]\n"open\n${nested(65)}`, 64, { lines: true })).toMatch(/line 3/);
    expect(jsonDepthViolation(`${"[".repeat(40)}\n${"[".repeat(40)}`, 64, { lines: true })).toBeUndefined();
    expect(jsonDepthViolation(`${"[".repeat(40)}\n${"[".repeat(40)}`, 64)).toBeDefined();
  });
});
