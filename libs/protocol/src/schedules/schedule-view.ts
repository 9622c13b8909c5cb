// What readers show of a schedule (SDK, CLI, HTTP, console): its definition, state and next fires.
import type { ScheduleDefinition, ScheduleEvent, ScheduleSlot } from "./schedule-schemas.js";
import type { ScheduleState } from "./schedule-state.js";
import { nextSlots } from "./schedule-times.js";

export interface ScheduleView {
  scheduleId: string;
  definition: ScheduleDefinition;
  createdAt: number;
  paused: boolean;
  pauseNote?: string;
  /** The next nominal times (ms), none while paused or after the end. */
  nextFires: number[];
  lastFire?: { slot: ScheduleSlot; commandId: string; sessionId: string };
  buffered?: ScheduleSlot;
  /** Manual triggers waiting for the scheduler. */
  pendingTriggers: number;
  counts: ScheduleState["counts"];
}

/** The view of a created schedule's fold at `now`; `undefined` before `schedule_created`. */
export function projectScheduleView(state: ScheduleState, now: number, n = 5): ScheduleView | undefined {
  const def = state.definition;
  if (!def) return undefined;
  return {
    scheduleId: def.scheduleId,
    definition: def,
    createdAt: state.createdAt,
    paused: state.paused,
    ...(state.pauseNote !== undefined ? { pauseNote: state.pauseNote } : {}),
    nextFires: state.paused ? [] : nextSlots(def, state.createdAt, Math.max(state.cursor, now - 1), n),
    ...(state.lastFire
      ? {
          lastFire: {
            slot: state.lastFire.slot,
            commandId: state.lastFire.commandId,
            sessionId: state.lastFire.sessionId,
          },
        }
      : {}),
    ...(state.buffered ? { buffered: state.buffered.slot } : {}),
    pendingTriggers: state.triggers.length,
    counts: state.counts,
  };
}

const iso = (ms: number) => new Date(ms).toISOString();

/** One line for a history event: when, what, the slot, and what happened or why not (CLI, console). */
export function describeScheduleEvent(e: ScheduleEvent): string {
  const at = iso(e.meta.ts);
  const slot = "slot" in e ? ` slot ${e.slot.trigger ? `trigger ${e.slot.trigger}` : iso(e.slot.at)}` : "";
  switch (e.type) {
    case "schedule_fired":
      return `${at} fired${slot} → ${e.commandType} ${e.commandId} on ${e.sessionId}`;
    case "schedule_skipped":
      return `${at} skipped${slot}: ${e.reason} (previous fire ${e.blockedBy} still running)`;
    case "schedule_buffered":
      return `${at} buffered${slot} until ${e.blockedBy} ends`;
    case "schedule_missed":
      return `${at} missed ${e.count} slot(s) ${iso(e.slot.at)} … ${iso(e.lastAt)}: older than the catch-up window`;
    case "schedule_failed":
      return `${at} failed${slot}: ${e.reason}`;
    case "schedule_cancel_requested":
      return `${at} asked ${e.sessionId} to abort ${e.commandId} (cancel_other)`;
    case "schedule_created":
      return `${at} created by ${e.meta.producer}`;
    case "schedule_paused":
      return `${at} paused${e.note ? `: ${e.note}` : ""}`;
    case "schedule_resumed":
      return `${at} resumed`;
    case "schedule_triggered":
      return `${at} trigger ${e.meta.id} asked`;
  }
}
