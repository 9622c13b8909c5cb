import { describe, expect, it } from "vitest";
import { applyEdits } from "./apply-edits.js";

describe("applyEdits", () => {
  it("reports whole touched lines with old and new line numbers", () => {
    const out = applyEdits(
      "\nfirst\nsecond\nthird",
      [
        { oldText: "\nfirst", newText: "\nFIRST\nextra" },
        { oldText: "third", newText: "3rd" },
      ],
      "f",
    );
    expect(out).toEqual({
      content: "\nFIRST\nextra\nsecond\n3rd",
      diff: "-1 \n-2 first\n+1 \n+2 FIRST\n+3 extra\n-4 third\n+5 3rd",
      firstChangedLine: 1,
    });
  });

  it("counts overlapping occurrences as ambiguous", () => {
    expect(() => applyEdits("aaa", [{ oldText: "aa", newText: "b" }], "f")).toThrow(
      "Found 2 occurrences of the text in f.",
    );
  });
});
