import type { SessionSummary } from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import { matchesSession, type SessionPage, searchSessions } from "./session-search.js";

const sessions: SessionSummary[] = Array.from({ length: 1_234 }, (_, i) => ({
  sessionId: `s-${i}`,
  name: i % 100 === 7 ? `Needle ${i}` : `hay ${i}`,
  status: "idle",
  updatedAt: 10_000 - i,
  seq: i + 1,
}));

/** The store's list over `sessions`: its cursor is the position after the page (opaque to the search). */
function store() {
  const reads: number[] = [];
  const listPage = async (opts: { limit: number; cursor?: string }): Promise<SessionPage> => {
    const from = opts.cursor === undefined ? 0 : Number(opts.cursor);
    const rows = sessions.slice(from, from + opts.limit);
    reads.push(rows.length);
    const end = from + rows.length;
    return end < sessions.length ? { sessions: rows, cursor: String(end) } : { sessions: rows };
  };
  return { listPage, reads };
}

describe("searchSessions", () => {
  it("matches names and ids, case-insensitively", () => {
    expect(matchesSession(sessions[7] as SessionSummary, " needle ")).toBe(true);
    expect(matchesSession(sessions[8] as SessionSummary, "s-8")).toBe(true);
    expect(matchesSession(sessions[8] as SessionSummary, "needle")).toBe(false);
  });

  it("pages through every match across the store's pages, each answer's cursor resuming right after it", async () => {
    const { listPage } = store();
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 10; i++) {
      const page = await searchSessions(listPage, "NEEDLE", { limit: 5, cursor, maxScanned: 10_000 });
      seen.push(...page.sessions.map((s) => s.sessionId));
      cursor = page.cursor;
      if (!cursor) break;
    }
    const expected = sessions.filter((s) => s.name?.startsWith("Needle")).map((s) => s.sessionId);
    expect(expected).toHaveLength(13);
    expect(seen).toEqual(expected);
    expect(cursor).toBeUndefined();
  });

  it("answers with what it found and a cursor once it has read maxScanned sessions", async () => {
    const { listPage, reads } = store();
    const page = await searchSessions(listPage, "no such name", { limit: 5, maxScanned: 600 });
    expect(page.sessions).toEqual([]);
    expect(page.cursor).toBe("1000");
    expect(reads).toEqual([500, 500]);
    const rest = await searchSessions(listPage, "no such name", { limit: 5, cursor: page.cursor, maxScanned: 600 });
    expect(rest).toEqual({ sessions: [] });
  });
});
