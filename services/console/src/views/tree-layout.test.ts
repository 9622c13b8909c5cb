import { emptySessionTree, type SessionEntry } from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import { describeEntry, layoutTree, treeFacts } from "./tree-layout.js";

const user = (id: string, parentId: string | null, text: string): SessionEntry => ({
  type: "message",
  id,
  parentId,
  timestamp: 0,
  message: { role: "user", content: text, timestamp: 0 },
});

describe("layoutTree", () => {
  it("keeps a first child in its parent's lane and opens a lane for every other branch", () => {
    //  a ─ b ─ c
    //       └─ d ─ e
    //  a ─ f
    const tree = {
      ...emptySessionTree(),
      entries: [
        user("a", null, "A"),
        user("b", "a", "B"),
        user("c", "b", "C"),
        user("d", "b", "D"),
        user("e", "d", "E"),
        user("f", "a", "F"),
      ],
      leafId: "e",
    };
    const { rows, lanes } = layoutTree(tree);
    expect(rows.map((r) => [r.entry.id, r.row, r.lane, r.parent?.row ?? null])).toEqual([
      ["a", 0, 0, null],
      ["b", 1, 0, 0],
      ["c", 2, 0, 1],
      ["d", 3, 1, 1],
      ["e", 4, 1, 3],
      ["f", 5, 2, 0],
    ]);
    expect(lanes).toBe(3);
    expect(describeEntry(tree.entries[3] as SessionEntry)).toBe("user: D");
  });

  it("draws a 5,000-entry chain without recursion", () => {
    const entries = Array.from({ length: 5_000 }, (_, i) => user(`e${i}`, i ? `e${i - 1}` : null, `m${i}`));
    const { rows, lanes } = layoutTree({ ...emptySessionTree(), entries, leafId: "e4999" });
    expect([rows.length, lanes, rows.at(-1)?.entry.id]).toEqual([5_000, 1, "e4999"]);
  });
});

describe("treeFacts", () => {
  it("marks the active branch, the forks, and what the branch's latest compaction summarized", () => {
    //  a ─ b ─ c ─ d ─ [compaction kept c] ─ e (leaf)
    //       └─ x
    const compaction: SessionEntry = {
      type: "compaction",
      id: "k",
      parentId: "d",
      timestamp: 0,
      summary: "a and b, summarized",
      firstKeptEntryId: "c",
      tokensBefore: 1200,
    };
    const tree = {
      ...emptySessionTree(),
      entries: [
        user("a", null, "A"),
        user("b", "a", "B"),
        user("c", "b", "C"),
        user("d", "c", "D"),
        user("x", "b", "X"),
        compaction,
        user("e", "k", "E"),
      ],
      leafId: "e",
    };
    const facts = treeFacts(tree);
    expect([...facts.onPath]).toEqual(["a", "b", "c", "d", "k", "e"]);
    expect([...facts.compacted]).toEqual(["a", "b"]);
    expect([...facts.forks]).toEqual([["b", 2]]);
    expect(facts.tips).toBe(2);
    expect(describeEntry(compaction)).toBe("compaction (1200 tokens before): a and b, summarized");
  });
});
