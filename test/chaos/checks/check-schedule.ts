// Invariant 8: a schedule fires each slot exactly once and never misses one silently. Every nominal
// slot has exactly one final outcome on the schedule's log (`schedule_buffered` is not final: the
// slot fires later), no slot fired twice, a fired slot's session holds exactly one accepted prompt
// (the slot's command id), a slot not fired has no session, and no slot due longer than the catch-up
// window before the log was read is left without an outcome.
import {
  createCommandId,
  fireCommandId,
  fireSessionId,
  nextSlots,
  type ScheduleDefinition,
  type ScheduleEvent,
} from "@fleet/protocol";
import { checkCommands } from "./check-commands.js";
import { checkRunsEnded } from "./check-liveness.js";
import { checkLogShape } from "./check-log-shape.js";
import { checkStore } from "./check-store.js";
import { checkToolEffects } from "./check-tool-effects.js";
import type { Executions, SentPrompt, SessionLog, StoreAnswer, ToolPolicies, Violation } from "./types.js";

export interface ScheduleRun {
  definition: ScheduleDefinition;
  /** `schedule_created`'s `meta.ts`: anchors an `every` spec without `anchor`. */
  createdAt: number;
  /** When the schedule's log was read. */
  readAt: number;
  /** The schedule's log, in order. */
  events: readonly ScheduleEvent[];
  /**
   * The log of each slot's session (`fireSessionId`) for the slots that fired, and for any other slot
   * whose session has events. A slot absent here has no session events.
   */
  sessions: ReadonlyMap<string, SessionLog>;
}

/** Final slot outcomes; `schedule_buffered` is followed by the slot's fire. */
type Final = "fired" | "skipped" | "missed" | "failed";

/** The spec's slots from the creation up to `until` (and the definition's `endAt`). */
export function scheduleSlots(def: ScheduleDefinition, createdAt: number, until: number): number[] {
  const bounded = { ...def, endAt: Math.min(def.endAt ?? until, until) };
  return nextSlots(bounded, createdAt, createdAt, 100_000);
}

export function checkSchedule(run: ScheduleRun): Violation[] {
  const out: Violation[] = [];
  const id = run.definition.scheduleId;
  const v = (kind: string, detail: string, sessionId?: string) =>
    out.push({ invariant: "schedule", ...(sessionId ? { sessionId } : {}), kind, detail });
  const slots = scheduleSlots(run.definition, run.createdAt, run.readAt);
  const nominal = new Set(slots);
  const finals = new Map<number, Final[]>();
  const buffered = new Set<number>();
  const rejected = new Set<number>();
  const fin = (at: number, f: Final) => finals.set(at, [...(finals.get(at) ?? []), f]);
  for (const e of run.events) {
    if (!("slot" in e) || e.slot.trigger !== undefined) continue;
    const at = e.slot.at;
    if (!nominal.has(at)) {
      v("slot_unknown", `${e.type} for ${iso(at)}, not a slot of the spec before ${iso(run.readAt)}`);
      continue;
    }
    switch (e.type) {
      case "schedule_fired": {
        fin(at, "fired");
        const wantSession = fireSessionId(id, e.slot);
        const wantCommand = fireCommandId(id, e.slot);
        if (e.sessionId !== wantSession || e.commandId !== wantCommand)
          v("fire_ids", `slot ${iso(at)} fired ${e.commandId} on ${e.sessionId}, not ${wantCommand} on ${wantSession}`);
        break;
      }
      case "schedule_buffered":
        buffered.add(at);
        break;
      case "schedule_skipped":
        fin(at, "skipped");
        break;
      case "schedule_failed":
        // A refusal of a fired slot's command comes after its `schedule_fired`; it is no second outcome.
        if (e.commandId !== undefined) rejected.add(at);
        else fin(at, "failed");
        break;
      case "schedule_missed":
        for (const s of slots) if (s >= at && s <= e.lastAt) fin(s, "missed");
        break;
    }
  }
  const due = run.readAt - run.definition.catchupWindowMs;
  for (const at of slots) {
    const f = finals.get(at) ?? [];
    const sessionId = fireSessionId(id, { at });
    const session = run.sessions.get(sessionId);
    if (f.filter((x) => x === "fired").length > 1) v("slot_fired_twice", `slot ${iso(at)} fired ${f.length} times`);
    else if (f.length > 1) v("slot_outcomes", `slot ${iso(at)} has ${f.length} outcomes: ${f.join(", ")}`);
    if (f.length === 0 && at <= due)
      v("slot_no_outcome", `slot ${iso(at)} (${buffered.has(at) ? "buffered, never fired" : "no event"})`);
    if (rejected.has(at)) v("fire_rejected", `the fire of slot ${iso(at)} was refused by its session`, sessionId);
    const accepted = (session?.events ?? []).filter((e) => e.type === "command_accepted" && e.commandType === "prompt");
    if (f.includes("fired")) {
      const wanted = fireCommandId(id, { at });
      const others = accepted.filter((e) => e.type === "command_accepted" && e.commandId !== wanted);
      if (accepted.length !== 1 || others.length > 0)
        v(
          "fire_prompts",
          `slot ${iso(at)}'s session accepted ${accepted.length} prompts (${others.length} not the slot's)`,
          sessionId,
        );
    } else if (session && session.events.length > 0) {
      v(
        "unrecorded_fire",
        `slot ${iso(at)} is ${f.join(", ") || "without outcome"} but its session has ${session.events.length} events (${accepted.length} accepted prompts)`,
        sessionId,
      );
    }
  }
  return out;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * The session invariants on each fired slot's session: its create_session and prompt (published
 * until stored) each have one outcome, the prompt one run, and the run obeys invariants 2 to 5 (no
 * probe: the schedule sends none).
 */
export function checkFiredSessions(
  run: ScheduleRun,
  fired: readonly { log: SessionLog; executions: Executions; store: StoreAnswer }[],
  policies: ToolPolicies,
): Violation[] {
  return fired.flatMap((r) => {
    const fire = run.events.find((e) => e.type === "schedule_fired" && e.sessionId === r.log.sessionId);
    const sent: SentPrompt[] =
      fire?.type === "schedule_fired"
        ? [createCommandId(fire.commandId), fire.commandId].map((commandId) => ({
            sessionId: r.log.sessionId,
            commandId,
            sends: 1,
            stored: true,
            done: true,
            probe: false,
          }))
        : [];
    return [
      ...checkCommands(r.log, sent),
      ...checkLogShape(r.log),
      ...checkToolEffects(r.log, r.executions, policies, 0),
      ...checkStore(r.log, r.store),
      ...checkRunsEnded(r.log),
    ];
  });
}

export interface ScheduleSummary {
  scheduleId: string;
  slots: number;
  fired: number;
  buffered: number;
  skipped: number;
  missed: number;
  failed: number;
}

/** Counts of the schedule's slots and outcomes, for the report. */
export function summarizeSchedule(run: ScheduleRun): ScheduleSummary {
  const count = (type: ScheduleEvent["type"]) => run.events.filter((e) => e.type === type).length;
  return {
    scheduleId: run.definition.scheduleId,
    slots: scheduleSlots(run.definition, run.createdAt, run.readAt).length,
    fired: count("schedule_fired"),
    buffered: count("schedule_buffered"),
    skipped: count("schedule_skipped"),
    missed: run.events.reduce((n, e) => n + (e.type === "schedule_missed" ? e.count : 0), 0),
    failed: count("schedule_failed"),
  };
}
