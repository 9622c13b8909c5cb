import { describe, expect, it } from "vitest";
import { decideScheduleCommand, decideScheduleStep, type ScheduleEventBody } from "./decide-schedule.js";
import { ScheduleDefinition, type ScheduleDefinitionInput, type ScheduleEvent } from "./schedule-schemas.js";
import { EMPTY_SCHEDULE_STATE, evolveSchedule, type ScheduleState, slotHasOutcome } from "./schedule-state.js";

const T0 = Date.UTC(2026, 11, 4, 12, 0, 0);
const MIN = 60_000;

let n = 0;
const withMeta = (body: ScheduleEventBody, ts: number): ScheduleEvent =>
  ({ ...body, meta: { v: 1, id: `e${++n}`, scheduleId: "s1", ts, producer: "spec" } }) as ScheduleEvent;

function created(def: Partial<ScheduleDefinitionInput> = {}, at = T0): ScheduleState {
  const definition = ScheduleDefinition.parse({
    scheduleId: "s1",
    spec: { kind: "cron", cron: "* * * * *" },
    target: { kind: "session", sessionId: "target", prompt: "tick" },
    ...def,
  });
  return evolveSchedule(EMPTY_SCHEDULE_STATE, withMeta({ type: "schedule_created", definition }, at));
}

/**
 * Plays the shell: takes steps until none is left at `now`, folding each step's event; a fire is
 * stored at the next sequence. `open(state)` answers whether the last fire's run is open.
 */
function tick(state: ScheduleState, now: number, open: (s: ScheduleState) => boolean = () => false) {
  const events: ScheduleEventBody[] = [];
  const published: string[] = [];
  for (let i = 0; i < 100; i++) {
    const step = decideScheduleStep(state, { now, lastFireOpen: open(state) });
    if (!step) break;
    let body: ScheduleEventBody;
    if (step.kind === "fire") {
      published.push(...step.commands.map((c) => `${c.type} ${c.id} ${c.sessionId}`));
      body = {
        type: "schedule_fired",
        slot: step.slot,
        commandId: step.commandId,
        commandType: step.commandType,
        sessionId: step.sessionId,
        commandSeq: 100 + state.events,
      };
    } else if (step.kind === "cancel") {
      published.push(`${step.command.type} ${step.command.id} ${step.command.sessionId}`);
      body = step.event;
    } else body = step.event;
    events.push(body);
    state = evolveSchedule(state, withMeta(body, now));
  }
  return { state, events, published };
}

const iso = (ms: number) => new Date(ms).toISOString();

describe("schedules / decider", () => {
  it("fires each slot once, with a command id derived from the slot", () => {
    const s0 = created();
    const a = tick(s0, T0 + MIN + 500);
    expect(a.published).toEqual([`prompt sched.s1.${iso(T0 + MIN)} target`]);
    expect(a.events).toEqual([
      {
        type: "schedule_fired",
        slot: { at: T0 + MIN },
        commandId: `sched.s1.${iso(T0 + MIN)}`,
        commandType: "prompt",
        sessionId: "target",
        commandSeq: 101,
      },
    ]);
    // The same instant again (another scheduler, a retry): nothing.
    expect(tick(a.state, T0 + MIN + 900).events).toEqual([]);
    // Nothing before the next slot.
    expect(tick(a.state, T0 + 2 * MIN - 1).events).toEqual([]);
    expect(tick(a.state, T0 + 2 * MIN).published).toEqual([`prompt sched.s1.${iso(T0 + 2 * MIN)} target`]);
  });

  it("starts a new session per fire with create_session's options passed through", () => {
    const create = { config: { thinkingLevel: "high", systemPrompt: "be brief" } } as const;
    const s0 = created({ target: { kind: "new_session", create, prompt: "report" } });
    const { published, events } = tick(s0, T0 + MIN);
    const id = `sched.s1.${iso(T0 + MIN)}`;
    expect(published).toEqual([`create_session ${id}.create s1-${T0 + MIN}`, `prompt ${id} s1-${T0 + MIN}`]);
    expect(events[0]).toMatchObject({ type: "schedule_fired", sessionId: `s1-${T0 + MIN}` });
    const step = decideScheduleStep(s0, { now: T0 + MIN, lastFireOpen: false });
    expect(step?.kind === "fire" && step.commands[0]).toEqual({
      type: "create_session",
      id: `${id}.create`,
      sessionId: `s1-${T0 + MIN}`,
      ts: T0 + MIN,
      config: { thinkingLevel: "high", systemPrompt: "be brief" },
    });
  });

  it("skip: records the slot skipped while the previous fire's run is open", () => {
    const a = tick(created(), T0 + MIN);
    const b = tick(a.state, T0 + 2 * MIN, () => true);
    expect(b.published).toEqual([]);
    expect(b.events).toEqual([
      {
        type: "schedule_skipped",
        slot: { at: T0 + 2 * MIN },
        reason: "overlap",
        blockedBy: `sched.s1.${iso(T0 + MIN)}`,
      },
    ]);
    expect(tick(b.state, T0 + 3 * MIN).published).toEqual([`prompt sched.s1.${iso(T0 + 3 * MIN)} target`]);
  });

  it("buffer_one: keeps one slot, skips the next, fires the kept one once the run closed", () => {
    const a = tick(created({ overlap: "buffer_one" }), T0 + MIN);
    const b = tick(a.state, T0 + 2 * MIN, () => true);
    const c = tick(b.state, T0 + 3 * MIN, () => true);
    expect([...b.events, ...c.events].map((e) => [e.type, "slot" in e ? e.slot.at : 0])).toEqual([
      ["schedule_buffered", T0 + 2 * MIN],
      ["schedule_skipped", T0 + 3 * MIN],
    ]);
    expect(c.events[0]).toMatchObject({ reason: "buffer_full" });
    const d = tick(c.state, T0 + 3 * MIN + 5000, (s) => s.lastFire?.slot.at !== T0 + MIN);
    expect(d.published).toEqual([`prompt sched.s1.${iso(T0 + 2 * MIN)} target`]);
    expect(d.state.buffered).toBeUndefined();
  });

  it("allow_all: fires anyway, as follow_up into a session whose run is open", () => {
    const a = tick(created({ overlap: "allow_all" }), T0 + MIN);
    const b = tick(a.state, T0 + 2 * MIN, () => true);
    expect(b.published).toEqual([`follow_up sched.s1.${iso(T0 + 2 * MIN)} target`]);
  });

  it("cancel_other: aborts the open run once, then fires the slot when it closed", () => {
    const a = tick(created({ overlap: "cancel_other" }), T0 + MIN);
    const first = `sched.s1.${iso(T0 + MIN)}`;
    const b = tick(a.state, T0 + 2 * MIN, () => true);
    expect(b.events.map((e) => e.type)).toEqual(["schedule_buffered", "schedule_cancel_requested"]);
    expect(b.published).toEqual([`abort ${first}.abort target`]);
    expect(tick(b.state, T0 + 2 * MIN + 1000, () => true).events).toEqual([]);
    const c = tick(b.state, T0 + 2 * MIN + 2000, () => false);
    expect(c.published).toEqual([`prompt sched.s1.${iso(T0 + 2 * MIN)} target`]);
  });

  it("catch-up: slots older than the window are one missed range; the ones within it fire", () => {
    const s0 = created({ catchupWindowMs: 2 * MIN + 1000 });
    // Down from T0 to T0+10min: slots 1..10; within the window (2 min + 1 s): 8, 9, 10.
    const a = tick(s0, T0 + 10 * MIN);
    expect(a.events[0]).toEqual({
      type: "schedule_missed",
      slot: { at: T0 + MIN },
      lastAt: T0 + 7 * MIN,
      count: 7,
      reason: "catchup_window",
    });
    expect(a.published).toEqual([8, 9, 10].map((k) => `prompt sched.s1.${iso(T0 + k * MIN)} target`));
    expect(a.state.counts).toMatchObject({ missed: 7, fired: 3 });
  });

  it("pause passes over the slots that fall while paused; resume fires from then on", () => {
    let s = created();
    s = evolveSchedule(s, withMeta({ type: "schedule_paused" }, T0 + 30_000));
    expect(tick(s, T0 + 5 * MIN).events).toEqual([]);
    s = evolveSchedule(s, withMeta({ type: "schedule_resumed" }, T0 + 5 * MIN + 10_000));
    const a = tick(s, T0 + 6 * MIN);
    expect(a.events.map((e) => e.type)).toEqual(["schedule_fired"]);
    expect(a.published).toEqual([`prompt sched.s1.${iso(T0 + 6 * MIN)} target`]);
  });

  it("trigger fires now, even while paused, and obeys the overlap policy", () => {
    let s = created({ paused: true });
    s = evolveSchedule(s, withMeta({ type: "schedule_triggered" }, T0 + 1000));
    const trig = s.triggers[0]!.trigger!;
    const a = tick(s, T0 + 1200);
    expect(a.published).toEqual([`prompt sched.s1.trigger.${trig} target`]);
    let b = evolveSchedule(a.state, withMeta({ type: "schedule_triggered" }, T0 + 2000));
    b = tick(b, T0 + 2100, () => true).state;
    expect(b.counts).toMatchObject({ fired: 1, skipped: 1 });
    expect(b.triggers).toEqual([]);
  });

  it("every and at specs; start and end bound the slots", () => {
    const every = created({ spec: { kind: "every", everyMs: 10_000 }, endAt: T0 + 35_000 });
    expect(tick(every, T0 + 60_000).events.map((e) => ("slot" in e ? e.slot.at - T0 : 0))).toEqual([
      10_000, 20_000, 30_000,
    ]);
    const at = created({ spec: { kind: "at", at: T0 + 5000 } });
    expect(tick(at, T0 + 4999).events).toEqual([]);
    expect(tick(tick(at, T0 + 5000).state, T0 + 999_999).events).toEqual([]);
    const later = created({ startAt: T0 + 3 * MIN });
    expect(tick(later, T0 + 3 * MIN).published).toEqual([`prompt sched.s1.${iso(T0 + 3 * MIN)} target`]);
  });

  it("daylight saving: a daily 02:30 in Europe/Berlin fires once a day across both changes", () => {
    const spring = Date.UTC(2026, 2, 27, 12);
    let s = created({ spec: { kind: "cron", cron: "30 2 * * *", timezone: "Europe/Berlin" } }, spring);
    const fires: string[] = [];
    // The scheduler ticks once an hour for four days (29 March: 02:00 → 03:00 local).
    for (let t = spring; t < spring + 4 * 24 * 3_600_000; t += 3_600_000) {
      const r = tick(s, t);
      fires.push(...r.events.map((e) => ("slot" in e ? iso(e.slot.at) : "")));
      s = r.state;
    }
    expect(fires).toEqual([
      "2026-03-28T01:30:00.000Z", // 02:30 CET
      "2026-03-29T01:00:00.000Z", // 02:30 does not exist: croner fires at 03:00 CEST
      "2026-03-30T00:30:00.000Z", // 02:30 CEST
      "2026-03-31T00:30:00.000Z",
    ]);
    const autumn = Date.UTC(2026, 9, 24, 12);
    s = created({ spec: { kind: "cron", cron: "30 2 * * *", timezone: "Europe/Berlin" } }, autumn);
    fires.length = 0;
    for (let t = autumn; t < autumn + 3 * 24 * 3_600_000; t += 600_000) {
      const r = tick(s, t);
      fires.push(...r.events.map((e) => ("slot" in e ? iso(e.slot.at) : "")));
      s = r.state;
    }
    // 25 October: 02:30 happens twice (CEST, then CET); it fires once, at the first.
    expect(fires).toEqual(["2026-10-25T00:30:00.000Z", "2026-10-26T01:30:00.000Z", "2026-10-27T01:30:00.000Z"]);
  });

  it("daylight saving: an hourly cron fires 25 times on the 25-hour day, each real hour once", () => {
    const day = Date.UTC(2026, 9, 24, 22); // 00:00 CEST, 25 October
    let s = created({ spec: { kind: "cron", cron: "0 * * * *", timezone: "Europe/Berlin" } }, day - 1);
    const fires: number[] = [];
    for (let t = day; t <= day + 25 * 3_600_000; t += 600_000) {
      const r = tick(s, t);
      fires.push(...r.events.map((e) => ("slot" in e ? e.slot.at : 0)));
      s = r.state;
    }
    expect(fires.length).toBe(26); // 00:00 CEST … 23:00 CET (25 slots) and the next day's 00:00
    expect(new Set(fires).size).toBe(fires.length);
    expect(fires.slice(1).every((f, i) => f - (fires[i] ?? 0) === 3_600_000)).toBe(true);
  });
});

describe("schedules / management commands", () => {
  const def = ScheduleDefinition.parse({
    scheduleId: "s1",
    spec: { kind: "cron", cron: "*/5 * * * *", timezone: "America/New_York" },
    target: { kind: "session", sessionId: "x", prompt: "p" },
  });

  it("creates once; a second create is a conflict", () => {
    expect(decideScheduleCommand(EMPTY_SCHEDULE_STATE, { type: "create", definition: def }, T0)).toEqual({
      ok: true,
      events: [{ type: "schedule_created", definition: def }],
    });
    expect(decideScheduleCommand(created(), { type: "create", definition: def }, T0)).toEqual({
      ok: false,
      rejection: { code: "conflict", message: "schedule s1 exists" },
    });
  });

  it("refuses a spec that cannot fire", () => {
    const bad = (spec: ScheduleDefinition["spec"]) =>
      decideScheduleCommand(EMPTY_SCHEDULE_STATE, { type: "create", definition: { ...def, spec } }, T0);
    expect(bad({ kind: "cron", cron: "61 * * * *" })).toMatchObject({ ok: false, rejection: { code: "invalid" } });
    expect(bad({ kind: "cron", cron: "* * * * *", timezone: "Mars/Olympus" })).toMatchObject({
      ok: false,
      rejection: { code: "invalid" },
    });
    expect(bad({ kind: "at", at: T0 - 1 })).toEqual({
      ok: false,
      rejection: { code: "invalid", message: "spec.at is not in the future" },
    });
  });

  it("pause and resume are idempotent; commands on a missing schedule are not_found", () => {
    const s = created();
    expect(decideScheduleCommand(s, { type: "resume" }, T0)).toEqual({ ok: true, events: [] });
    const paused = evolveSchedule(s, withMeta({ type: "schedule_paused" }, T0));
    expect(decideScheduleCommand(paused, { type: "pause" }, T0)).toEqual({ ok: true, events: [] });
    expect(decideScheduleCommand(EMPTY_SCHEDULE_STATE, { type: "trigger" }, T0)).toEqual({
      ok: false,
      rejection: { code: "not_found", message: "no such schedule" },
    });
  });
});

describe("schedules / a fire its session refused", () => {
  it("records the slot failed with the rejection, once", () => {
    const a = tick(created(), T0 + MIN);
    const rejected = { code: "budget_exceeded", reason: "the session's budget is spent" };
    const step = decideScheduleStep(a.state, { now: T0 + MIN + 2000, lastFireOpen: false, lastFireRejected: rejected });
    expect(step).toEqual({
      kind: "record",
      event: {
        type: "schedule_failed",
        slot: { at: T0 + MIN },
        reason: "budget_exceeded: the session's budget is spent",
        commandId: `sched.s1.${iso(T0 + MIN)}`,
      },
    });
    if (step?.kind !== "record") throw new Error("unreachable");
    const failed = evolveSchedule(a.state, withMeta(step.event, T0 + MIN + 2000));
    expect(failed.counts).toMatchObject({ fired: 1, failed: 1 });
    expect(
      decideScheduleStep(failed, { now: T0 + MIN + 3000, lastFireOpen: false, lastFireRejected: rejected }),
    ).toBeUndefined();
  });
});

describe("schedules / fold", () => {
  it("a slot fired but not yet recorded has no outcome, also after a pause; once recorded it has", () => {
    const before = tick(created(), T0 + MIN).state;
    const slot = { at: T0 + 2 * MIN };
    expect(slotHasOutcome(before, slot)).toBe(false);
    const paused = evolveSchedule(before, withMeta({ type: "schedule_paused" }, T0 + 2 * MIN + 10));
    expect(slotHasOutcome(paused, slot)).toBe(false);
    const fired = evolveSchedule(
      paused,
      withMeta(
        { type: "schedule_fired", slot, commandId: "c", commandType: "prompt", sessionId: "target", commandSeq: 9 },
        T0 + 2 * MIN + 20,
      ),
    );
    expect(slotHasOutcome(fired, slot)).toBe(true);
    expect(fired.counts.fired).toBe(before.counts.fired + 1);
  });

  it("a schedule deleted and created again under its id starts from its new creation", () => {
    const old = tick(created(), T0 + 3 * MIN).state;
    expect(old.counts).toMatchObject({ fired: 2, missed: 1 });
    const again = created({ overlap: "allow_all" }, T0 + 10 * MIN);
    const refolded = evolveSchedule(
      old,
      withMeta({ type: "schedule_created", definition: again.definition! }, T0 + 10 * MIN),
    );
    expect(refolded).toEqual(again);
  });
});
