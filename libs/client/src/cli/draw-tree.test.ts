import type { SessionEntry } from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import { createStyle } from "./ansi.js";
import { drawTree, resolveEntryRef } from "./draw-tree.js";

const plain = createStyle(false);
const user = (id: string, parentId: string | null, text: string): SessionEntry => ({
  type: "message",
  id,
  parentId,
  timestamp: 1,
  message: { role: "user", content: [{ type: "text", text }], timestamp: 1 },
});
const label = (id: string, parentId: string, targetId: string, text: string): SessionEntry => ({
  type: "label",
  id,
  parentId,
  timestamp: 1,
  targetId,
  label: text,
});

describe("drawTree", () => {
  it("keeps a chain at one indentation and opens a branch per child, marking the leaf", () => {
    const entries = [
      user("aaaaaaaa-0001", null, "root"),
      user("aaaaaaaa-0002", "aaaaaaaa-0001", "left"),
      user("aaaaaaaa-0003", "aaaaaaaa-0002", "left again"),
      user("aaaaaaaa-0004", "aaaaaaaa-0001", "right"),
      user("aaaaaaaa-0005", "aaaaaaaa-0004", "right again"),
      user("aaaaaaaa-0006", "aaaaaaaa-0001", "third"),
    ];
    const lines = drawTree({ entries, leafId: "aaaaaaaa-0005", labels: { "aaaaaaaa-0002": "first try" } }, plain);
    expect(lines).toEqual([
      '● aaa-0001 user: "root"',
      '├─● aaa-0002 user: "left" [first try]',
      '│ ● aaa-0003 user: "left again"',
      '├─● aaa-0004 user: "right"',
      '│ ● aaa-0005 user: "right again" ◀ leaf',
      '└─● aaa-0006 user: "third"',
    ]);
  });

  it("dims entries off the leaf's path when colour is on", () => {
    const entries = [user("r", null, "root"), user("a", "r", "a"), user("b", "r", "b")];
    const lines = drawTree({ entries, leafId: "b" }, createStyle(true));
    expect(lines[1]).toBe('├─\u001b[2m●\u001b[22m \u001b[2ma user: "a"\u001b[22m');
    expect(lines[2]).toBe('└─\u001b[2m●\u001b[22m \u001b[1mb user: "b"\u001b[22m \u001b[32m◀ leaf\u001b[39m');
  });

  it("draws a deep chain without recursion and shows a label entry", () => {
    const entries: SessionEntry[] = [user("e0", null, "m0")];
    for (let i = 1; i < 20_000; i++) entries.push(user(`e${i}`, `e${i - 1}`, `m${i}`));
    entries.push(label("l1", "e19999", "e0", "start"));
    const lines = drawTree({ entries, leafId: "l1" }, plain);
    expect(lines).toHaveLength(20_001);
    expect(lines.at(-1)).toBe('● l1 label e0 = "start" ◀ leaf');
  });

  it("notes a leaf before the first entry", () => {
    expect(drawTree({ entries: [user("r", null, "x")], leafId: null }, plain)).toEqual([
      '● r user: "x"',
      "◀ leaf (before the first entry)",
    ]);
  });
});

describe("resolveEntryRef", () => {
  const entries = [
    user("0193aaaa-1111-7abc-8def-000000000001", null, "a"),
    user("0193aaaa-1111-7abc-8def-000000000002", null, "b"),
  ];
  it("accepts a full id, a unique suffix or a unique prefix", () => {
    expect(resolveEntryRef(entries, "0193aaaa-1111-7abc-8def-000000000002")).toEqual({ ok: true, id: entries[1]?.id });
    expect(resolveEntryRef(entries, "00000001")).toEqual({ ok: true, id: entries[0]?.id });
  });
  it("refuses an ambiguous or unknown reference", () => {
    expect(resolveEntryRef(entries, "0193aaaa")).toEqual({
      ok: false,
      error: '"0193aaaa" matches 2 entries; use more characters',
    });
    expect(resolveEntryRef(entries, "zzz")).toEqual({ ok: false, error: 'no entry matches "zzz"' });
  });
});
