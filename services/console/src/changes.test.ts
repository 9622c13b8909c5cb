import { describe, expect, it } from "vitest";
import { type ChangeNotice, changesOf, mergeNotices } from "./changes.js";

describe("console / change feed frames", () => {
  it("reads a frame's sessions, approvals and `all` (absent from an older gateway: false)", () => {
    expect(changesOf(JSON.stringify({ sessions: ["s-1"], approvals: false, all: false }))).toEqual({
      sessions: ["s-1"],
      approvals: false,
      all: false,
    });
    expect(changesOf(JSON.stringify({ sessions: ["s-2"], approvals: true }))).toEqual({
      sessions: ["s-2"],
      approvals: true,
      all: false,
    });
    expect(changesOf(JSON.stringify({ sessions: [], approvals: true, all: true }))).toEqual({
      sessions: [],
      approvals: true,
      all: true,
    });
  });

  it("refuses what is not a changes frame", () => {
    expect(changesOf("{oops")).toBeUndefined();
    expect(changesOf(JSON.stringify({ sessions: [1], approvals: true }))).toBeUndefined();
    expect(changesOf(JSON.stringify({ sessions: [], approvals: "yes" }))).toBeUndefined();
    expect(changesOf(JSON.stringify({ sessions: [], approvals: true, all: "yes" }))).toBeUndefined();
  });

  it("merges notices: a reload of everything wins over named sessions", () => {
    const named: ChangeNotice = { kind: "changes", sessions: ["a"], approvals: false };
    expect(mergeNotices(named, { kind: "changes", sessions: ["b", "a"], approvals: true })).toEqual({
      kind: "changes",
      sessions: ["a", "b"],
      approvals: true,
    });
    expect(mergeNotices(named, { kind: "opened" })).toEqual({ kind: "opened" });
    expect(mergeNotices({ kind: "opened" }, named)).toEqual({ kind: "opened" });
  });
});
