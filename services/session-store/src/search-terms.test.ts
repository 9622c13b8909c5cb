import { describe, expect, it } from "vitest";
import { normalizeSearchText, searchMember, searchMembers, sessionOfMember } from "./search-terms.js";
import { emptyProjectedSession, type ProjectedSession } from "./session-state.js";

const session = (name: string | null, labels: Record<string, string>, lastSeq = 3): ProjectedSession => {
  const empty = emptyProjectedSession("S-Abc");
  return { ...empty, lastSeq, tree: { ...empty.tree, name, labels } };
};

describe("search index members", () => {
  it("hold the id and the name from each word start and each distinct label, normalized", () => {
    const members = searchMembers(session("  Fix the\tBuild-Cache ", { e1: "Release", e2: "release", e3: "hot fix" }));
    expect(members.sort()).toEqual(
      [
        searchMember("s-abc", "id", "S-Abc"),
        searchMember("abc", "id", "S-Abc"),
        searchMember("fix the build-cache", "name", "S-Abc"),
        searchMember("the build-cache", "name", "S-Abc"),
        searchMember("build-cache", "name", "S-Abc"),
        searchMember("cache", "name", "S-Abc"),
        searchMember("release", "label", "S-Abc"),
        searchMember("hot fix", "label", "S-Abc"),
      ].sort(),
    );
    for (const m of members) expect(sessionOfMember(m)).toBe("S-Abc");
  });

  it("are none before the first event, and a long name is cut", () => {
    expect(searchMembers(session("x", {}, 0))).toEqual([]);
    const long = Array.from({ length: 40 }, (_, i) => `w${i}`).join(" ");
    const names = searchMembers(session(long, {})).filter((m) => m.includes("\u0000name\u0000"));
    expect(names).toHaveLength(16);
    for (const m of names) expect(m.indexOf("\u0000")).toBeLessThanOrEqual(100);
  });

  it("normalize control characters away, so a member always splits on its separators", () => {
    expect(normalizeSearchText("a\u0000b\n\nC")).toBe("a b c");
    expect(sessionOfMember("no separator")).toBeNull();
  });
});
