// What readers show of a schedule (SDK, CLI, HTTP, console): its definition, state and next fires.
import type { ScheduleDefinition, ScheduleSlot } from "./schedule-schemas.js";
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
