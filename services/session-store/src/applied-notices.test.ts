import type { FleetEvent } from "@fleet/protocol";
import { MAX_NOTICE_SESSIONS, StoreAppliedNotice, storeAllNotice, storeAppliedNotices } from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import { changesOfBatch, noticesFor } from "./applied-notices.js";
import type { Decoded, PreparedBatch } from "./projector.js";

const decoded = (seq: number, type: string | null): Decoded => ({
  seq,
  prevSeq: undefined,
  event: type === null ? null : ({ type } as unknown as FleetEvent),
});
const batch = (sessions: Record<string, Decoded[]>): PreparedBatch => ({
  sessions: new Map(Object.entries(sessions).map(([id, events]) => [id, { subject: `fleet.evt.0.${id}`, events }])),
  maxSeqByPartition: new Map(),
});

describe("session store / applied notices", () => {
  it("names every session of a batch, and approvals when one of its events may change them", () => {
    expect(changesOfBatch(batch({ "s-1": [decoded(1, "message_update")], "s-2": [decoded(2, null)] }))).toEqual({
      sessions: ["s-1", "s-2"],
      approvals: false,
    });
    for (const type of ["tool_approval_requested", "tool_approval_resolved", "agent_end", "session_deleting"]) {
      const changes = changesOfBatch(batch({ "s-1": [decoded(1, "turn_end")], "s-2": [decoded(2, type)] }));
      expect(changes, type).toEqual({ sessions: ["s-1", "s-2"], approvals: true });
    }
  });

  it("splits a batch of many sessions into notices of at most MAX_NOTICE_SESSIONS, none for an empty one", () => {
    const ids = Array.from({ length: MAX_NOTICE_SESSIONS * 2 + 1 }, (_, i) => `s-${i}`);
    const notices = storeAppliedNotices(1, 77, ids, true);
    expect(notices.map((n) => n.sessions.length)).toEqual([MAX_NOTICE_SESSIONS, MAX_NOTICE_SESSIONS, 1]);
    expect(notices.flatMap((n) => n.sessions)).toEqual(ids);
    expect(notices.every((n) => n.group === 1 && n.seq === 77 && n.approvals)).toBe(true);
    expect(storeAppliedNotices(0, 5, [], true)).toEqual([]);
  });

  it("a namespace switch is one notice naming no session, with `all` (seq 0 when the namespace holds none of the group)", () => {
    expect(StoreAppliedNotice.parse(storeAllNotice(2, 0))).toEqual({
      group: 2,
      seq: 0,
      sessions: [],
      approvals: true,
      all: true,
    });
    expect(StoreAppliedNotice.parse(storeAllNotice(0, 41)).seq).toBe(41);
  });

  it("a group's next notice says `all` once its notices may have been lost: a failed publish, or a reconnect since", () => {
    const change = { sessions: ["s-1"], approvals: false };
    const named = storeAppliedNotices(0, 9, ["s-1"], false);
    const all = [storeAllNotice(0, 9)];
    // No notice of group 0 yet (this process has announced none of it): nothing lost.
    expect(noticesFor(new Map(), 0, 0, 9, change)).toEqual(named);
    // Its last notice went out in this connection epoch.
    expect(noticesFor(new Map([[0, 3]]), 3, 0, 9, change)).toEqual(named);
    // The connection came back since (epoch 4): what was in flight may be gone.
    expect(noticesFor(new Map([[0, 3]]), 4, 0, 9, change)).toEqual(all);
    // Its last publish failed.
    expect(noticesFor(new Map([[0, -1]]), 4, 0, 9, change)).toEqual(all);
    // Another group's loss is not this one's; an `all` change is `all` whatever came before.
    expect(noticesFor(new Map([[1, -1]]), 0, 0, 9, change)).toEqual(named);
    expect(noticesFor(new Map([[0, 2]]), 2, 0, 9, { all: true })).toEqual(all);
  });
});
