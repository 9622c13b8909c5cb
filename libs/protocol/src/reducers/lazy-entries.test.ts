// The fold with its entries apart (PROTOCOL change 64): read back lazily, it is the fold, at every
// cut of every golden log; any entry read, in any order, is the entry; folding on gives the state
// the whole log gives; and encoding it again gives the bytes the original encodes to.
import { describe, expect, it } from "vitest";
import { SCENARIOS } from "../../fixtures/scenarios.js";
import type { FleetEvent } from "../events.js";
import { copyEntries, encodeEntryLines, lazyEntries, parsedEntryCount, splitEntryLines } from "./lazy-entries.js";
import { decodeSessionFoldApart, encodeSessionFoldApart } from "./session-fold-codec.js";
import { copySessionState, foldSessionEvents, type SessionState } from "./session-state.js";
import { buildContext, getBranch, getEntry } from "./session-tree.js";

/** Through bytes, as a snapshot stores it: the fold's JSON, the ids' JSON and the entry lines. */
function roundTrip(state: SessionState): SessionState {
  const apart = encodeSessionFoldApart(state);
  const fold = JSON.parse(JSON.stringify(apart.fold));
  const ids = JSON.parse(JSON.stringify(apart.entryIds));
  const decoded = decodeSessionFoldApart(fold, ids, apart.entryLines.slice());
  if (!decoded.ok) throw new Error(decoded.error);
  return decoded.value;
}

const bytesOf = (state: SessionState) => {
  const apart = encodeSessionFoldApart(state);
  return { fold: JSON.stringify(apart.fold), ids: apart.entryIds, lines: Buffer.from(apart.entryLines).toString() };
};

describe("session fold with its entries apart", () => {
  for (const [name, make] of Object.entries(SCENARIOS)) {
    it(`${name}: at every cut, the lazily decoded fold equals the fold, entry by entry, and folds on to the same state`, () => {
      const events: FleetEvent[] = make();
      const whole = foldSessionEvents(events);
      for (let cut = 0; cut <= events.length; cut++) {
        const prefix = foldSessionEvents(events.slice(0, cut));
        const n = prefix.tree.entries.length;

        // Decoding parses no entry; an id lookup parses only the entry asked for.
        const restored = roundTrip(prefix);
        expect(parsedEntryCount(restored.tree.entries), `cut ${cut}`).toBe(0);
        const last = prefix.tree.entries[n - 1];
        if (last) {
          expect(getEntry(restored.tree, last.id), `cut ${cut}`).toStrictEqual({ ok: true, entry: last });
          expect(parsedEntryCount(restored.tree.entries), `cut ${cut}`).toBe(1);
        }
        // Any entry, read in any order, is the entry.
        const reading = roundTrip(prefix);
        for (let i = n - 1; i >= 0; i -= 2)
          expect(reading.tree.entries[i], `cut ${cut} entry ${i}`).toStrictEqual(prefix.tree.entries[i]);
        for (let i = 0; i < n; i++)
          expect(reading.tree.entries[i], `cut ${cut} entry ${i}`).toStrictEqual(prefix.tree.entries[i]);

        // The whole fold, its context, and encoding it again (partly read) give the original's.
        const partlyRead = roundTrip(prefix);
        if (n > 0) void partlyRead.tree.entries[n >> 1];
        expect(bytesOf(partlyRead), `cut ${cut}`).toStrictEqual(bytesOf(prefix));
        expect(restored, `cut ${cut}`).toStrictEqual(prefix);
        expect(buildContext(roundTrip(prefix).tree), `cut ${cut}`).toStrictEqual(buildContext(prefix.tree));
        expect(getBranch(roundTrip(prefix).tree), `cut ${cut}`).toStrictEqual(getBranch(prefix.tree));

        // Folding on from the lazy fold (and from a copy of it, as the snapshot writer takes one).
        const resumed = roundTrip(prefix);
        const copy = copySessionState(resumed);
        expect(foldSessionEvents(events.slice(cut), resumed), `cut ${cut}`).toStrictEqual(whole);
        expect(foldSessionEvents(events.slice(cut), copy), `cut ${cut}`).toStrictEqual(whole);
        // A fold folded on from a lazy one encodes to what the whole log's fold encodes to.
        const again = foldSessionEvents(events.slice(cut), roundTrip(prefix));
        expect(bytesOf(again), `cut ${cut}`).toStrictEqual(bytesOf(whole));
      }
    });
  }

  it("a copy stays lazy and apart: pushes to either list do not reach the other", () => {
    const state = foldSessionEvents(SCENARIOS.steering?.() ?? []);
    const entries = state.tree.entries;
    expect(entries.length).toBeGreaterThan(3);
    const split = splitEntryLines(
      encodeEntryLines(entries),
      entries.map((e) => e.id),
    );
    if (!split.ok) throw new Error(split.error);
    const lazy = lazyEntries(split.lines);
    const copy = copyEntries(lazy);
    expect(Array.isArray(lazy) && Array.isArray(copy)).toBe(true);
    expect(parsedEntryCount(copy)).toBe(0);
    copy.push(entries[0] as never);
    expect(copy.length).toBe(entries.length + 1);
    expect(lazy.length).toBe(entries.length);
    expect([...lazy]).toStrictEqual(entries);
    expect(parsedEntryCount(lazy)).toBe(entries.length);
    expect(copy.slice(0, -1)).toStrictEqual(entries);
  });

  it("refuses entry lines that do not match the ids, and a fold that carries entries itself", () => {
    const state = foldSessionEvents(SCENARIOS.steering?.() ?? []);
    const apart = encodeSessionFoldApart(state);
    const fold = JSON.parse(JSON.stringify(apart.fold));
    const short = decodeSessionFoldApart(fold, apart.entryIds.slice(1), apart.entryLines);
    expect(short.ok === false && short.error).toMatch(/^entryLines/);
    const long = decodeSessionFoldApart(fold, [...apart.entryIds, "x"], apart.entryLines);
    expect(long.ok === false && long.error).toMatch(/^entryLines/);
    const unterminated = decodeSessionFoldApart(fold, apart.entryIds, apart.entryLines.subarray(0, -1));
    expect(unterminated.ok === false && unterminated.error).toMatch(/^entryLines/);
    expect(decodeSessionFoldApart(fold, "ids", apart.entryLines).ok).toBe(false);
    const carrying = { ...fold, tree: { ...fold.tree, entries: [{ id: "x" }] } };
    expect(decodeSessionFoldApart(carrying, apart.entryIds, apart.entryLines).ok).toBe(false);
  });
});
