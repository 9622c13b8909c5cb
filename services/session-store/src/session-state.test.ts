import { buildContext, type FleetEvent, FleetEvent as FleetEventSchema, foldSessionTreeEvents } from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import { decodeSession, encodeMeta, planWrite } from "./session-codec.js";
import { emptyProjectedSession, type ProjectedSession, projectEvents, type StreamEvent } from "./session-state.js";
import { prng, syntheticEvents } from "./testing/synthetic-session.js";

const events = syntheticEvents({
  sessionId: "s-1",
  seed: 7,
  runs: 40,
  branchRate: 0.3,
  compactionRate: 0.2,
  labelRate: 0.4,
  settingsRate: 0.4,
  streaming: true,
});
const stream = (evs: readonly FleetEvent[], firstSeq = 1): StreamEvent[] =>
  evs.map((event, i) => ({ seq: firstSeq + i * 3, event }));

/** What Redis would hold for `s`, as the read script returns it. */
function rawOf(s: ProjectedSession) {
  return {
    meta: encodeMeta(s),
    entries: s.tree.entries.map((e) => JSON.stringify(e)),
    labels: { ...s.tree.labels },
    leafEvents: [...s.tree.leafEventIds],
    approvals: Object.fromEntries([...s.approvals].map(([id, a]) => [id, JSON.stringify(a)])),
  };
}

describe("synthetic sessions", () => {
  it("are valid events with every tree operation", () => {
    for (const e of events) expect(FleetEventSchema.safeParse(e).success).toBe(true);
    const types = new Set(events.map((e) => e.type));
    for (const t of ["leaf", "compaction", "label", "branch_summary", "message_end", "session_created"]) {
      expect(types.has(t as FleetEvent["type"])).toBe(true);
    }
  });
});

describe("projectEvents", () => {
  it("folds the tree exactly as the protocol reducer, whatever the batching", () => {
    const expected = foldSessionTreeEvents(events);
    const all = stream(events);
    const rnd = prng(3);
    for (let trial = 0; trial < 5; trial++) {
      let state = emptyProjectedSession("s-1");
      for (let i = 0; i < all.length; ) {
        const n = 1 + Math.floor(rnd() * 20);
        state = projectEvents(state, all.slice(i, i + n));
        i += n;
      }
      expect(state.tree).toEqual(expected);
      expect(state.lastSeq).toBe((all.at(-1) as StreamEvent).seq);
      expect(state.createdAt).toBe((events[0] as FleetEvent).meta.ts);
      expect(state.updatedAt).toBe((events.at(-1) as FleetEvent).meta.ts);
      expect(state.status).toBe("idle");
    }
  });

  it("keeps the leaf's settings equal to buildContext's after every batch (incremental or walked)", () => {
    const log = syntheticEvents({ sessionId: "s-2", seed: 9, runs: 150, branchRate: 0.3, settingsRate: 0.6 });
    const all = stream(log);
    const rnd = prng(11);
    let checked = 0;
    for (let trial = 0; trial < 5; trial++) {
      let state = emptyProjectedSession("s-2");
      for (let i = 0; i < all.length; ) {
        const n = 1 + Math.floor(rnd() * 8);
        state = projectEvents(state, all.slice(i, i + n));
        i += n;
        const ctx = buildContext(state.tree);
        if (!ctx.ok) continue;
        expect({
          model: state.model,
          thinkingLevel: state.thinkingLevel,
          activeToolNames: state.activeToolNames,
        }).toEqual({ model: ctx.model, thinkingLevel: ctx.thinkingLevel, activeToolNames: ctx.activeToolNames });
        checked++;
      }
    }
    // The log changes model, thinking level and tools, and moves the leaf.
    const settingsTypes = new Set(log.map((e) => e.type));
    for (const t of ["model_change", "thinking_level_change", "active_tools_change", "leaf"] as const) {
      expect(settingsTypes.has(t)).toBe(true);
    }
    expect(checked).toBeGreaterThan(100);
  });

  it("is a no-op for redelivered events (seq at or below lastSeq)", () => {
    const all = stream(events);
    const state = projectEvents(emptyProjectedSession("s-1"), all);
    expect(projectEvents(state, all)).toBe(state);
    expect(projectEvents(state, all.slice(5, 9))).toBe(state);
  });

  it("ignores a duplicated event at a new sequence but advances lastSeq", () => {
    const all = stream(events);
    const state = projectEvents(emptyProjectedSession("s-1"), all);
    const dupEntry = events.find((e) => e.type === "message_end") as FleetEvent;
    const dupLeaf = events.find((e) => e.type === "leaf") as FleetEvent;
    const next = projectEvents(state, [
      { seq: state.lastSeq + 1, event: dupEntry },
      { seq: state.lastSeq + 2, event: dupLeaf },
    ]);
    expect(next.tree).toBe(state.tree);
    expect(next.lastSeq).toBe(state.lastSeq + 2);
    expect(next.updatedAt).toBe(dupLeaf.meta.ts);
  });

  it("advances lastSeq only for an undecodable event", () => {
    const state = projectEvents(emptyProjectedSession("s-1"), stream(events.slice(0, 4)));
    const next = projectEvents(state, [{ seq: 100, event: null }]);
    expect(next).toEqual({ ...state, lastSeq: 100 });
  });

  it("tracks running/idle from agent_start to agent_end", () => {
    const start = events.findIndex((e) => e.type === "agent_start");
    const mid = projectEvents(emptyProjectedSession("s-1"), stream(events.slice(0, start + 1)));
    expect(mid.status).toBe("running");
  });
});

describe("session codec", () => {
  it("reads back what it encodes, in full and incrementally", () => {
    const all = stream(events);
    const half = projectEvents(emptyProjectedSession("s-1"), all.slice(0, 60));
    const full = projectEvents(half, all.slice(60));
    const decoded = decodeSession("s-1", rawOf(full));
    expect(decoded).toEqual({ ok: true, session: full });
    const raw = rawOf(full);
    const incremental = decodeSession(
      "s-1",
      {
        ...raw,
        entries: raw.entries.slice(half.tree.entries.length),
        leafEvents: raw.leafEvents.slice(half.tree.leafEventIds.length),
      },
      half,
    );
    expect(incremental).toEqual({ ok: true, session: full });
  });

  it("plans only the appended entries and the changed fields", () => {
    const all = stream(events);
    const a = projectEvents(emptyProjectedSession("s-1"), all.slice(0, 30));
    const b = projectEvents(a, all.slice(30, 34));
    const plan = planWrite(a, b);
    expect(plan.expectedLastSeq).toBe(a.lastSeq);
    expect(plan.firstIndex).toBe(a.tree.entries.length);
    expect(plan.entries.map((e) => e.id)).toEqual(b.tree.entries.slice(a.tree.entries.length).map((e) => e.id));
    expect(plan.meta.find(([f]) => f === "config")).toBeUndefined();
    expect(plan.meta.find(([f]) => f === "lastSeq")).toEqual(["lastSeq", String(b.lastSeq)]);
    const first = planWrite(emptyProjectedSession("s-1"), a);
    expect(first.meta.map(([f]) => f).sort()).toEqual(Object.keys(encodeMeta(a)).sort());
  });

  it("keeps pending approvals and plans the index entries of change 44", () => {
    const start = events.findIndex((e) => e.type === "agent_start");
    const running = projectEvents(emptyProjectedSession("s-1"), stream(events.slice(0, start + 1)));
    const meta = (n: number) => ({ v: 1 as const, id: `ap-${n}`, sessionId: "s-1", ts: 5_000 + n, producer: "t" });
    const asked = projectEvents(running, [
      {
        seq: running.lastSeq + 1,
        event: {
          type: "tool_approval_requested",
          toolCallId: "c1",
          toolName: "bash",
          args: { cmd: "ls" },
          meta: meta(1),
        },
      },
      {
        seq: running.lastSeq + 2,
        event: { type: "tool_approval_requested", toolCallId: "c2", toolName: "bash", args: {}, meta: meta(2) },
      },
    ] as StreamEvent[]);
    expect([...asked.approvals.keys()]).toEqual(["c1", "c2"]);
    const plan = planWrite(running, asked);
    expect(plan.approvalSet.map(([id]) => id)).toEqual(["c1", "c2"]);
    expect(plan).toMatchObject({ running: true, oldestApproval: 5_001, termAdd: [], termDel: [] });
    expect(decodeSession("s-1", rawOf(asked))).toEqual({ ok: true, session: asked });
    const decided = projectEvents(asked, [
      {
        seq: asked.lastSeq + 1,
        event: { type: "tool_approval_resolved", toolCallId: "c1", approved: true, meta: meta(3) },
      },
    ] as StreamEvent[]);
    expect(planWrite(asked, decided)).toMatchObject({ approvalSet: [], approvalDel: ["c1"], oldestApproval: 5_002 });
    expect(planWrite(emptyProjectedSession("s-1"), running).termAdd.length).toBeGreaterThan(0);
  });

  it("reports corrupt values instead of guessing", () => {
    const s = projectEvents(emptyProjectedSession("s-1"), stream(events.slice(0, 10)));
    const raw = rawOf(s);
    expect(decodeSession("s-1", { ...raw, meta: { ...raw.meta, leaf: "{" } })).toMatchObject({ ok: false });
    expect(decodeSession("s-1", { ...raw, entries: ['{"type":"nope"}'] })).toMatchObject({
      ok: false,
      error: expect.stringContaining("entry 0"),
    });
  });
});
