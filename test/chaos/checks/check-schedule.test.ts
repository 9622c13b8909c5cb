// Invariant 8 on hand-built schedule logs: a log where each slot has one outcome passes, and each
// way of firing twice, missing silently or running an unrecorded fire is caught.
import {
  buildContext,
  createCommandId,
  fireCommandId,
  fireSessionId,
  foldSessionTreeEvents,
  getTree,
  type ScheduleDefinition,
  type ScheduleEvent,
} from "@fleet/protocol";
import { createLogBuilder } from "@fleet/protocol/testing";
import { describe, expect, it } from "vitest";
import { checkFiredSessions, checkSchedule, type ScheduleRun, summarizeSchedule } from "./check-schedule.js";
import { addPromptRun } from "./sample-log.js";
import type { SessionLog } from "./types.js";

const ID = "chaos-1-every";
const T0 = 1_700_000_000_000;
const AT = (n: number) => T0 + n * 5_000;
const DEF: ScheduleDefinition = {
  scheduleId: ID,
  spec: { kind: "every", everyMs: 5_000 },
  target: { kind: "new_session", prompt: "scheduled" },
  overlap: "buffer_one",
  catchupWindowMs: 30_000,
  endAt: AT(6),
};
let n = 0;
const meta = () => ({ v: 1 as const, id: `e${++n}`, scheduleId: ID, ts: T0, producer: "loop-0-1" });
const slot = (i: number) => ({ at: AT(i) });
const fired = (i: number): ScheduleEvent => ({
  type: "schedule_fired",
  slot: slot(i),
  commandId: fireCommandId(ID, slot(i)),
  commandType: "prompt",
  sessionId: fireSessionId(ID, slot(i)),
  commandSeq: 10 + i,
  afterSeq: 0,
  meta: meta(),
});
const buffered = (i: number): ScheduleEvent => ({
  type: "schedule_buffered",
  slot: slot(i),
  blockedBy: "x",
  meta: meta(),
});
const skipped = (i: number): ScheduleEvent => ({
  type: "schedule_skipped",
  slot: slot(i),
  reason: "buffer_full",
  blockedBy: "x",
  meta: meta(),
});
const created: ScheduleEvent = { type: "schedule_created", definition: DEF, meta: meta() };

/** A fired slot's session: its create_session and the slot's prompt accepted, one complete run. */
function fireSession(i: number, extraPrompt = false): SessionLog {
  const sessionId = fireSessionId(ID, slot(i));
  const b = createLogBuilder(i, sessionId);
  b.add({
    type: "command_accepted",
    commandId: createCommandId(fireCommandId(ID, slot(i))),
    commandType: "create_session",
  });
  addPromptRun(b, fireCommandId(ID, slot(i)), 1);
  if (extraPrompt) addPromptRun(b, "other", 2);
  return { sessionId, events: b.events, invalid: 0 };
}

/** Slots 1..6: 1 fired, 2 buffered then fired, 3 skipped, 4-5 missed, 6 fired. */
function goodRun(): ScheduleRun {
  const events: ScheduleEvent[] = [
    created,
    fired(1),
    buffered(2),
    skipped(3),
    fired(2),
    {
      type: "schedule_missed",
      slot: slot(4),
      lastAt: AT(5),
      count: 2,
      reason: "catchup_window",
      meta: meta(),
    },
    fired(6),
  ];
  const sessions = new Map([1, 2, 6].map((i) => [fireSessionId(ID, slot(i)), fireSession(i)] as const));
  return { definition: DEF, createdAt: T0, readAt: AT(6) + 1_000, events, sessions };
}
const kinds = (vs: { kind: string }[]) => vs.map((v) => v.kind);

describe("chaos / invariant 8: schedule slots", () => {
  it("passes a log where every slot has one final outcome and each fire one session with one prompt", () => {
    const run = goodRun();
    expect(checkSchedule(run)).toEqual([]);
    expect(summarizeSchedule(run)).toEqual({
      scheduleId: ID,
      slots: 6,
      fired: 3,
      buffered: 1,
      skipped: 1,
      missed: 2,
      failed: 0,
    });
  });
  it("catches a slot fired twice and a slot with two outcomes", () => {
    const run = goodRun();
    const events = [...run.events, fired(1), skipped(6)];
    expect(kinds(checkSchedule({ ...run, events }))).toEqual(["slot_fired_twice", "slot_outcomes"]);
  });
  it("catches a slot due longer than the catch-up window ago without an outcome, not a recent one", () => {
    const run = goodRun();
    // Slot 3 loses its skip; slot 6 its fire (and its session).
    const events = run.events.filter((e) => !("slot" in e) || (e.slot.at !== AT(3) && e.slot.at !== AT(6)));
    const sessions = new Map([...run.sessions].filter(([id]) => id !== fireSessionId(ID, slot(6))));
    const early = checkSchedule({ ...run, events, sessions, readAt: AT(3) + 31_000 });
    expect(early.map((v) => [v.kind, v.detail])).toEqual([
      ["slot_no_outcome", `slot ${new Date(AT(3)).toISOString()} (no event)`],
    ]);
    // Read later, slot 6 is past the window too; a buffered slot never fired is named so.
    const late = checkSchedule({ ...run, events: [...events, buffered(6)], sessions, readAt: AT(6) + 31_000 });
    expect(late.map((v) => v.detail)).toEqual([
      `slot ${new Date(AT(3)).toISOString()} (no event)`,
      `slot ${new Date(AT(6)).toISOString()} (buffered, never fired)`,
    ]);
  });
  it("catches a fire whose session ran another prompt or none, and a session of a slot not fired", () => {
    const run = goodRun();
    const sessions = new Map(run.sessions);
    sessions.set(fireSessionId(ID, slot(1)), fireSession(1, true));
    sessions.delete(fireSessionId(ID, slot(2)));
    sessions.set(fireSessionId(ID, slot(3)), fireSession(3));
    const found = checkSchedule({ ...run, sessions });
    expect(found.map((v) => [v.kind, v.sessionId])).toEqual([
      ["fire_prompts", fireSessionId(ID, slot(1))],
      ["fire_prompts", fireSessionId(ID, slot(2))],
      ["unrecorded_fire", fireSessionId(ID, slot(3))],
    ]);
  });
  it("catches a fire refused by its session and an outcome for no slot of the spec", () => {
    const run = goodRun();
    const refused: ScheduleEvent = {
      type: "schedule_failed",
      slot: slot(6),
      reason: "invalid: no",
      commandId: fireCommandId(ID, slot(6)),
      meta: meta(),
    };
    const stray: ScheduleEvent = {
      type: "schedule_skipped",
      slot: { at: AT(1) + 1 },
      reason: "overlap",
      blockedBy: "x",
      meta: meta(),
    };
    expect(kinds(checkSchedule({ ...run, events: [...run.events, refused, stray] }))).toEqual([
      "slot_unknown",
      "fire_rejected",
    ]);
  });
});

describe("chaos / invariant 8: fired sessions obey the session invariants", () => {
  const storeOf = (log: SessionLog) => {
    const tree = foldSessionTreeEvents(log.events);
    const view = getTree(tree);
    return {
      sessionId: log.sessionId,
      context: { ...buildContext(tree), seq: 99 },
      tree: { entries: view.entries, leafId: view.leafId, labels: view.labels, seq: 99 },
    };
  };
  const ranOnce = (log: SessionLog) =>
    new Map(log.events.flatMap((e) => (e.type === "tool_execution_start" ? [[e.toolCallId, 1] as const] : [])));
  const policies = { bash: "never", write: "safe" } as const;

  it("passes well-formed fired sessions and catches a fire without its create_session's outcome or run end", () => {
    const run = goodRun();
    const fired = [...run.sessions.values()].map((log) => ({ log, executions: ranOnce(log), store: storeOf(log) }));
    expect(checkFiredSessions(run, fired, policies)).toEqual([]);
    const first = fired[0]!;
    const broken = {
      ...first,
      log: {
        ...first.log,
        events: first.log.events.filter(
          (e) => e.type !== "agent_end" && !(e.type === "command_accepted" && e.commandType === "create_session"),
        ),
      },
    };
    const found = kinds(checkFiredSessions(run, [{ ...broken, store: storeOf(broken.log) }], policies));
    expect(found).toContain("no_outcome");
    expect(found).toContain("run_open");
  });
});
