import { describe, expect, it } from "vitest";
import { sseParser } from "../testing/sse-reader.js";
import { commentFrame, resumeAfter } from "./frame.js";

describe("gateway / SSE framing", () => {
  it("resumes after Last-Event-ID, else ?after=, else from the start", () => {
    expect(resumeAfter("42", 7)).toBe(42);
    expect(resumeAfter(" 42 ", undefined)).toBe(42);
    expect(resumeAfter(undefined, 7)).toBe(7);
    expect(resumeAfter("", 7)).toBe(7);
    expect(resumeAfter(undefined, undefined)).toBe(0);
    expect(resumeAfter("4x", 7)).toBe("invalid");
    expect(resumeAfter("-1", 7)).toBe("invalid");
  });

  it("keeps comments on one line, and the test client parses frames split anywhere", () => {
    expect(commentFrame("a\nb")).toBe(": a b\n\n");
    const frames: unknown[] = [];
    const feed = sseParser((f) => frames.push(f));
    const text = 'id: 3\nevent: leaf\ndata: {"a":1}\n\n: keepalive\n\n';
    for (const ch of text) feed(ch);
    expect(frames).toEqual([{ id: "3", event: "leaf", data: '{"a":1}' }, { comment: "keepalive" }]);
  });
});
