// The identities of a fire, derived from the schedule and the slot only: any scheduler, at any time,
// derives the same ones, so a slot's commands are deduplicated by the log (PROTOCOL "Schedules").
import type { ScheduleSlot } from "./schedule-schemas.js";

/** The run-starting command's id: `sched.<scheduleId>.<slot ISO time>`, or `sched.<id>.trigger.<eventId>`. */
export function fireCommandId(scheduleId: string, slot: ScheduleSlot): string {
  return slot.trigger !== undefined
    ? `sched.${scheduleId}.trigger.${slot.trigger}`
    : `sched.${scheduleId}.${new Date(slot.at).toISOString()}`;
}

/** A `new_session` fire's session: `<scheduleId>-<slot ms>`, or `<scheduleId>-t-<trigger event id>`. */
export function fireSessionId(scheduleId: string, slot: ScheduleSlot): string {
  return slot.trigger !== undefined ? `${scheduleId}-t-${slot.trigger}` : `${scheduleId}-${slot.at}`;
}

/** The id of `cancel_other`'s `abort` of a fire. */
export const cancelCommandId = (fireCommandId: string) => `${fireCommandId}.abort`;

/** The id of a `new_session` fire's `create_session`. */
export const createCommandId = (fireCommandId: string) => `${fireCommandId}.create`;
