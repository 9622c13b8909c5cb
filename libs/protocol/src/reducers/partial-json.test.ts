import { describe, expect, it } from "vitest";
import { parseStreamingJson } from "./partial-json.js";

describe("parseStreamingJson", () => {
  it("parses complete JSON objects exactly", () => {
    expect(parseStreamingJson('{"path":"a.txt","limit":10,"deep":{"x":[1,true,null]}}')).toEqual({
      path: "a.txt",
      limit: 10,
      deep: { x: [1, true, null] },
    });
  });

  it("gives {} for empty, whitespace, non-object and garbage input", () => {
    expect(parseStreamingJson("")).toEqual({});
    expect(parseStreamingJson("   ")).toEqual({});
    expect(parseStreamingJson("[1,2]")).toEqual({});
    expect(parseStreamingJson('"text"')).toEqual({});
    expect(parseStreamingJson("nonsense")).toEqual({});
    expect(parseStreamingJson('{"a":1} trailing')).toEqual({});
    expect(parseStreamingJson('{"a" 1}')).toEqual({});
  });

  it("returns what is complete at every prefix of a streamed object", () => {
    const full = '{"command":"ls -la","timeout":30,"flags":["a","b"],"ok":true}';
    const seen = new Map<number, unknown>();
    for (let i = 0; i <= full.length; i++) seen.set(i, parseStreamingJson(full.slice(0, i)));
    expect(seen.get(1)).toEqual({});
    expect(seen.get(5)).toEqual({}); // {"com : unfinished key is dropped
    expect(seen.get(11)).toEqual({}); // {"command": : key without value is dropped
    expect(seen.get(12)).toEqual({ command: "" });
    expect(seen.get(15)).toEqual({ command: "ls " }); // unterminated string keeps its text
    expect(seen.get(31)).toEqual({ command: "ls -la", timeout: 3 });
    expect(seen.get(32)).toEqual({ command: "ls -la", timeout: 30 });
    expect(seen.get(44)).toEqual({ command: "ls -la", timeout: 30, flags: ["a"] });
    expect(seen.get(56)).toEqual({ command: "ls -la", timeout: 30, flags: ["a", "b"] });
    expect(seen.get(58)).toEqual({ command: "ls -la", timeout: 30, flags: ["a", "b"] }); // "ok":tr dropped
    expect(seen.get(full.length)).toEqual({ command: "ls -la", timeout: 30, flags: ["a", "b"], ok: true });
  });

  it("drops unfinished numbers and literals at the end", () => {
    expect(parseStreamingJson('{"a":-')).toEqual({});
    expect(parseStreamingJson('{"a":1.')).toEqual({});
    expect(parseStreamingJson('{"a":1e')).toEqual({});
    expect(parseStreamingJson('{"a":1.5')).toEqual({ a: 1.5 });
    expect(parseStreamingJson('{"a":nu')).toEqual({});
    expect(parseStreamingJson('{"a":[1,fa')).toEqual({ a: [1] });
  });

  it("handles escapes: complete, unfinished at the end, and invalid ones kept literally", () => {
    expect(parseStreamingJson('{"a":"x\\ny\\u0041')).toEqual({ a: "x\nyA" });
    expect(parseStreamingJson('{"a":"x\\')).toEqual({ a: "x" });
    expect(parseStreamingJson('{"a":"x\\u00')).toEqual({ a: "x" });
    expect(parseStreamingJson('{"a":"C:\\dir\\x"}')).toEqual({ a: "C:\\dir\\x" });
    expect(parseStreamingJson('{"a":"line1\nline2"}')).toEqual({ a: "line1\nline2" });
  });

  it("closes nested open containers", () => {
    expect(parseStreamingJson('{"edits":[{"oldText":"a","newText":"b"},{"oldText":"c')).toEqual({
      edits: [{ oldText: "a", newText: "b" }, { oldText: "c" }],
    });
  });

  it("keeps a key named __proto__ as data, without touching the prototype", () => {
    const parsed = parseStreamingJson('{"__proto__":{"polluted":1},"b":2');
    expect(Object.hasOwn(parsed, "__proto__")).toBe(true);
    expect(parsed.b).toBe(2);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
