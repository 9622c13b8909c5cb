// The fold of a schedule's log: what the scheduler decides from, and what readers show.
import type { ScheduleDefinition, ScheduleEvent, ScheduleSlot } from "./schedule-schemas.js";

/** The last fire: the one whose run the overlap policy looks at. */
export interface OpenFire {
  slot: ScheduleSlot;
  commandId: string;
  /** `follow_up` when it fired into an open run of its session (`allow_all`). */
  commandType: "prompt" | "follow_up";
  sessionId: string;
  commandSeq: number;
  /** The session's last sequence before the fire (absent on fires logged without it). */
  afterSeq: number | undefined;
  cancelRequested: boolean;
  /** Its command was refused (a `schedule_failed` naming it is logged). */
  failed: boolean;
}

export interface ScheduleState {
  /** Absent until `schedule_created`. */
  definition: ScheduleDefinition | undefined;
  createdAt: number;
  paused: boolean;
  pauseNote: string | undefined;
  /** Every spec slot at or before this instant has an outcome (or was passed over while paused). */
  cursor: number;
  lastFire: OpenFire | undefined;
  buffered: { slot: ScheduleSlot; blockedBy: string } | undefined;
  /** Manual triggers without an outcome yet, oldest first. */
  triggers: ScheduleSlot[];
  counts: { fired: number; skipped: number; missed: number; failed: number; buffered: number };
  /** Events folded. */
  events: number;
}

export const EMPTY_SCHEDULE_STATE: ScheduleState = {
  definition: undefined,
  createdAt: 0,
  paused: false,
  pauseNote: undefined,
  cursor: 0,
  lastFire: undefined,
  buffered: undefined,
  triggers: [],
  counts: { fired: 0, skipped: 0, missed: 0, failed: 0, buffered: 0 },
  events: 0,
};

const sameSlot = (a: ScheduleSlot, b: ScheduleSlot) => a.at === b.at && a.trigger === b.trigger;

/**
 * Whether the log already gives `slot` an outcome: a trigger left the queue, a spec slot is at or
 * before the cursor, and neither is the slot kept by `buffer_one`. Pure.
 */
export function slotHasOutcome(state: ScheduleState, slot: ScheduleSlot): boolean {
  if (state.buffered && sameSlot(state.buffered.slot, slot)) return false;
  if (slot.trigger !== undefined) return !state.triggers.some((t) => t.trigger === slot.trigger);
  return state.cursor >= slot.at;
}

/** Marks a slot as having an outcome: a trigger leaves the queue, a spec slot moves the cursor. */
function settle(state: ScheduleState, slot: ScheduleSlot): ScheduleState {
  const buffered = state.buffered && sameSlot(state.buffered.slot, slot) ? undefined : state.buffered;
  if (slot.trigger !== undefined)
    return { ...state, buffered, triggers: state.triggers.filter((t) => t.trigger !== slot.trigger) };
  return { ...state, buffered, cursor: Math.max(state.cursor, slot.at) };
}

/** Folds one event. Pure; an event of another schedule's log is the caller's bug. */
export function evolveSchedule(state: ScheduleState, event: ScheduleEvent): ScheduleState {
  const s = { ...state, events: state.events + 1 };
  const count = (k: keyof ScheduleState["counts"]) => ({ ...s.counts, [k]: s.counts[k] + 1 });
  switch (event.type) {
    case "schedule_created":
      // Only ever the first event of a subject: a fold that still holds a deleted schedule of the
      // same id (its subject purged, then created again) starts afresh.
      return {
        ...EMPTY_SCHEDULE_STATE,
        events: 1,
        definition: event.definition,
        createdAt: event.meta.ts,
        cursor: event.meta.ts,
        paused: event.definition.paused === true,
        pauseNote: undefined,
      };
    case "schedule_paused":
      return { ...s, paused: true, pauseNote: event.note };
    case "schedule_resumed":
      // Slots that fell while paused are passed over, not missed.
      return { ...s, paused: false, pauseNote: undefined, cursor: Math.max(s.cursor, event.meta.ts) };
    case "schedule_triggered":
      return { ...s, triggers: [...s.triggers, { at: event.meta.ts, trigger: event.meta.id }] };
    case "schedule_fired":
      return settle(
        {
          ...s,
          counts: count("fired"),
          lastFire: {
            slot: event.slot,
            commandId: event.commandId,
            commandType: event.commandType,
            sessionId: event.sessionId,
            commandSeq: event.commandSeq,
            afterSeq: event.afterSeq,
            cancelRequested: false,
            failed: false,
          },
        },
        event.slot,
      );
    case "schedule_buffered":
      return {
        ...settle({ ...s, counts: count("buffered") }, event.slot),
        buffered: { slot: event.slot, blockedBy: event.blockedBy },
      };
    case "schedule_cancel_requested":
      return s.lastFire?.commandId === event.commandId
        ? { ...s, lastFire: { ...s.lastFire, cancelRequested: true } }
        : s;
    case "schedule_skipped":
      return settle({ ...s, counts: count("skipped") }, event.slot);
    case "schedule_failed":
      if (event.commandId !== undefined && s.lastFire?.commandId === event.commandId)
        return { ...s, counts: count("failed"), lastFire: { ...s.lastFire, failed: true } };
      return settle({ ...s, counts: count("failed") }, event.slot);
    case "schedule_missed":
      return {
        ...s,
        counts: { ...s.counts, missed: s.counts.missed + event.count },
        cursor: Math.max(s.cursor, event.lastAt),
      };
  }
}

export const foldSchedule = (events: readonly ScheduleEvent[], from: ScheduleState = EMPTY_SCHEDULE_STATE) =>
  events.reduce(evolveSchedule, from);
