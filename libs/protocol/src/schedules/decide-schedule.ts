// The scheduler's pure decider: given a schedule's fold, the time and whether the last fire's run is
// still open, the next step to take. The shell takes one step, appends its event, folds it and asks
// again, so a crash between two steps leaves a log that the next scheduler decides from unchanged.
import type { FleetCommand } from "../commands.js";
import { cancelCommandId, createCommandId, fireCommandId, fireSessionId } from "./fire-ids.js";
import type { ScheduleCommand, ScheduleEvent, ScheduleSlot } from "./schedule-schemas.js";
import type { ScheduleState } from "./schedule-state.js";
import { checkScheduleSpec, nextSlotAfter } from "./schedule-times.js";

/** An event to append, without its `meta` (the shell adds it). */
export type ScheduleEventBody<T extends ScheduleEvent["type"] = ScheduleEvent["type"]> = T extends unknown
  ? Omit<Extract<ScheduleEvent, { type: T }>, "meta">
  : never;

export type ScheduleFireStep = Extract<ScheduleStep, { kind: "fire" }>;

export type ScheduleStep =
  /**
   * Publish `commands` in order (msgID = each command's id), then append `schedule_fired` with the
   * last one's stream sequence. A crash before the append repeats the same commands: deduplicated.
   */
  | {
      kind: "fire";
      slot: ScheduleSlot;
      commandId: string;
      sessionId: string;
      commandType: "prompt" | "follow_up";
      commands: FleetCommand[];
    }
  /** Publish `abort` to the open fire's session, then append `schedule_cancel_requested`. */
  | { kind: "cancel"; command: FleetCommand; event: ScheduleEventBody<"schedule_cancel_requested"> }
  /** Append this outcome. */
  | { kind: "record"; event: ScheduleEventBody };

export interface TickInput {
  now: number;
  /** Whether the last fire's run is still open (its command not yet decided, or its session has open work). */
  lastFireOpen: boolean;
  /**
   * The last fire's command was refused by its session (read from the session's log once it closed):
   * recorded as `schedule_failed` with the rejection's code and reason.
   */
  lastFireRejected?: { code: string; reason: string };
}

/** At most this many slots are counted into one `schedule_missed`. */
export const MAX_MISSED_PER_EVENT = 10_000;

/** The next step for this schedule now, or `undefined` when there is nothing to do until a later time. */
export function decideScheduleStep(state: ScheduleState, input: TickInput): ScheduleStep | undefined {
  const def = state.definition;
  if (!def) return undefined;
  const open = state.lastFire !== undefined && input.lastFireOpen;
  const blockedBy = state.lastFire?.commandId ?? "";
  if (state.lastFire && !state.lastFire.failed && input.lastFireRejected) {
    const { code, reason } = input.lastFireRejected;
    return {
      kind: "record",
      event: {
        type: "schedule_failed",
        slot: state.lastFire.slot,
        reason: `${code}: ${reason}`,
        commandId: state.lastFire.commandId,
      },
    };
  }

  if (state.buffered) {
    if (!open) return fire(state, state.buffered.slot, false);
    if (def.overlap === "cancel_other" && state.lastFire && !state.lastFire.cancelRequested) {
      const { commandId, sessionId } = state.lastFire;
      return {
        kind: "cancel",
        command: { type: "abort", id: cancelCommandId(commandId), sessionId },
        event: { type: "schedule_cancel_requested", commandId, sessionId },
      };
    }
  }

  let slot: ScheduleSlot | undefined = state.triggers[0];
  if (!slot && !state.paused) {
    const next = nextSlotAfter(def, state.createdAt, state.cursor);
    if (next === undefined || next > input.now) return undefined;
    if (input.now - next > def.catchupWindowMs) return missed(state, next, input.now);
    slot = { at: next };
  }
  if (!slot) return undefined;
  if (!open) return fire(state, slot, false);
  switch (def.overlap) {
    case "skip":
      return { kind: "record", event: { type: "schedule_skipped", slot, reason: "overlap", blockedBy } };
    case "allow_all":
      return fire(state, slot, true);
    case "buffer_one":
    case "cancel_other":
      return state.buffered
        ? { kind: "record", event: { type: "schedule_skipped", slot, reason: "buffer_full", blockedBy } }
        : { kind: "record", event: { type: "schedule_buffered", slot, blockedBy } };
  }
}

function missed(state: ScheduleState, first: number, now: number): ScheduleStep {
  const def = state.definition!;
  let lastAt = first;
  let count = 1;
  while (count < MAX_MISSED_PER_EVENT) {
    const next = nextSlotAfter(def, state.createdAt, lastAt);
    if (next === undefined || now - next <= def.catchupWindowMs) break;
    lastAt = next;
    count++;
  }
  return {
    kind: "record",
    event: { type: "schedule_missed", slot: { at: first }, lastAt, count, reason: "catchup_window" },
  };
}

/**
 * The fire step of `slot`: its commands (a new session's `create_session` then `prompt`, or the
 * target session's `prompt`, `follow_up` when `overlapping`), the same for every call.
 */
export function fire(state: ScheduleState, slot: ScheduleSlot, overlapping: boolean): ScheduleFireStep {
  const def = state.definition!;
  const commandId = fireCommandId(def.scheduleId, slot);
  const target = def.target;
  if (target.kind === "session") {
    const commandType = overlapping ? "follow_up" : "prompt";
    return {
      kind: "fire",
      slot,
      commandId,
      sessionId: target.sessionId,
      commandType,
      commands: [{ type: commandType, id: commandId, sessionId: target.sessionId, ts: slot.at, text: target.prompt }],
    };
  }
  const sessionId = fireSessionId(def.scheduleId, slot);
  return {
    kind: "fire",
    slot,
    commandId,
    sessionId,
    commandType: "prompt",
    commands: [
      { ...target.create, type: "create_session", id: createCommandId(commandId), sessionId, ts: slot.at },
      { type: "prompt", id: commandId, sessionId, ts: slot.at, text: target.prompt },
    ],
  };
}

/** A management command's refusal. */
export interface ScheduleRejection {
  code: "not_found" | "conflict" | "invalid";
  message: string;
}

/**
 * Decides a management command against the schedule's fold: the events to append (none: a no-op,
 * such as pausing a paused schedule), or a rejection.
 */
export function decideScheduleCommand(
  state: ScheduleState,
  command: ScheduleCommand,
  now: number,
): { ok: true; events: ScheduleEventBody[] } | { ok: false; rejection: ScheduleRejection } {
  const reject = (code: ScheduleRejection["code"], message: string) => ({
    ok: false as const,
    rejection: { code, message },
  });
  if (command.type === "create") {
    const def = command.definition;
    if (state.definition) return reject("conflict", `schedule ${def.scheduleId} exists`);
    const spec = checkScheduleSpec(def.spec);
    if (!spec.ok) return reject("invalid", `spec: ${spec.error}`);
    if (def.spec.kind === "at" && def.spec.at <= now) return reject("invalid", "spec.at is not in the future");
    if (def.endAt !== undefined && def.endAt <= now) return reject("invalid", "endAt is not in the future");
    return { ok: true, events: [{ type: "schedule_created", definition: def }] };
  }
  if (!state.definition) return reject("not_found", "no such schedule");
  switch (command.type) {
    case "pause":
      return {
        ok: true,
        events: state.paused ? [] : [{ type: "schedule_paused", note: command.note, by: command.by }],
      };
    case "resume":
      return { ok: true, events: state.paused ? [{ type: "schedule_resumed", by: command.by }] : [] };
    case "trigger":
      return { ok: true, events: [{ type: "schedule_triggered", by: command.by }] };
  }
}
