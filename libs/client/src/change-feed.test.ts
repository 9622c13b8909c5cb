import { describe, expect, it } from "vitest";
import { addChange, batchOf, changeOf, MAX_FRAME_SESSIONS, noChanges } from "./change-feed.js";

const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

describe("client / change feed", () => {
  it("takes a store notice's sessions and approvals flag, and a lifecycle record's session", () => {
    expect(
      changeOf("fleet.store.applied.0", json({ group: 0, seq: 9, sessions: ["s-1", "s-2"], approvals: false })),
    ).toEqual({ sessions: ["s-1", "s-2"], approvals: false, all: false });
    expect(changeOf("fleet.store.applied.2", json({ group: 2, seq: 1, sessions: ["s-3"], approvals: true }))).toEqual({
      sessions: ["s-3"],
      approvals: true,
      all: false,
    });
    expect(changeOf("fleet.evt.lifecycle.s-3", json({ type: "session_deleted" }))).toEqual({
      sessions: ["s-3"],
      approvals: true,
      all: false,
    });
  });

  it("takes a namespace switch's notice as `all`", () => {
    expect(
      changeOf("fleet.store.applied.1", json({ group: 1, seq: 0, sessions: [], approvals: true, all: true })),
    ).toEqual({ sessions: [], approvals: true, all: true });
    expect(
      changeOf("fleet.store.applied.1", json({ group: 1, seq: 3, sessions: [], approvals: true, all: false })),
    ).toHaveProperty("error");
  });

  it("ignores the events themselves: they can come before the store applied them", () => {
    expect(changeOf("fleet.evt.0.s-2", json({ type: "tool_approval_requested" }))).toBeNull();
    expect(changeOf("fleet.cmd.1.s-4", json({ type: "prompt" }))).toBeNull();
  });

  it("names what is wrong with a notice that does not parse", () => {
    expect(changeOf("fleet.store.applied.0", new TextEncoder().encode("{oops"))).toEqual({ error: "not JSON" });
    const bad = changeOf("fleet.store.applied.0", json({ group: 0, seq: 1, sessions: ["a.b"], approvals: false }));
    expect(bad).toEqual({ error: expect.stringContaining("must match") });
    expect(changeOf("fleet.store.applied.1", json({ group: 2, seq: 1, sessions: [], approvals: false }))).toEqual({
      error: "group 2 is not its subject's 1",
    });
    expect(changeOf("fleet.store.applied.0", json({ group: 0, sessions: [], approvals: false }))).toHaveProperty(
      "error",
    );
  });

  it("merges changes: sessions once each, approvals and all sticky", () => {
    const pending = noChanges();
    addChange(pending, { sessions: ["s-1", "s-2"], approvals: false, all: false });
    addChange(pending, { sessions: ["s-2", "s-3"], approvals: true, all: false });
    addChange(pending, { sessions: [], approvals: false, all: false });
    expect(batchOf(pending)).toEqual({ sessions: ["s-1", "s-2", "s-3"], approvals: true, all: false });
    addChange(pending, { sessions: [], approvals: true, all: true });
    addChange(pending, { sessions: ["s-4"], approvals: false, all: false });
    expect(batchOf(pending)).toEqual({ sessions: [], approvals: true, all: true });
  });

  it(`past ${MAX_FRAME_SESSIONS} sessions it is \`all\` and keeps no names; exactly the cap is named`, () => {
    const names = Array.from({ length: MAX_FRAME_SESSIONS + 1 }, (_, i) => `s-${i}`);
    const atCap = noChanges();
    addChange(atCap, { sessions: names.slice(0, MAX_FRAME_SESSIONS), approvals: false, all: false });
    expect(batchOf(atCap).sessions).toHaveLength(MAX_FRAME_SESSIONS);
    addChange(atCap, { sessions: names.slice(MAX_FRAME_SESSIONS), approvals: false, all: false });
    expect(batchOf(atCap)).toEqual({ sessions: [], approvals: true, all: true });
    expect(atCap.sessions.size).toBeLessThanOrEqual(MAX_FRAME_SESSIONS + 1);
  });
});
