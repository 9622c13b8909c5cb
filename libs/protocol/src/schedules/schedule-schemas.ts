// Schedules (change 55): definitions, the events of a schedule's log `fleet.sched.<scheduleId>` and
// the management commands decided against that log.
import { z } from "zod";
import { CreateSessionCommand } from "../commands.js";
import { SessionId } from "../ids.js";

/** A schedule id is a subject token of at most 64 characters (a fire's session id adds a suffix). */
export const SCHEDULE_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
export const ScheduleId = z.string().regex(SCHEDULE_ID_PATTERN, "must match ^[A-Za-z0-9_-]{1,64}$");
export type ScheduleId = z.infer<typeof ScheduleId>;
export const isScheduleId = (value: unknown): value is ScheduleId =>
  typeof value === "string" && SCHEDULE_ID_PATTERN.test(value);

/** Milliseconds since the epoch (UTC). */
const EpochMs = z.number().int().nonnegative();

/**
 * When a schedule's slots fall:
 * - `cron`: a 5-, 6- (seconds first) or 7-field cron expression (croner), in `timezone` (IANA, default
 *   `UTC`), so a daylight-saving change moves the slots with the zone's wall clock;
 * - `every`: every `everyMs` (at least 1 s) from `anchor` (default: the schedule's creation);
 * - `at`: one slot at `at`.
 */
export const ScheduleSpec = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("cron"),
    cron: z.string().min(1).max(256),
    timezone: z.string().min(1).max(64).optional(),
  }),
  z.object({ kind: z.literal("every"), everyMs: z.number().int().min(1000), anchor: EpochMs.optional() }),
  z.object({ kind: z.literal("at"), at: EpochMs }),
]);
export type ScheduleSpec = z.infer<typeof ScheduleSpec>;

/**
 * `create_session`'s own arguments, passed through unchanged to each fire's `create_session`: every
 * field of that command but its envelope (`type`, `id`, `sessionId`, `ts`, trace context).
 */
export const ScheduleCreateOptions = CreateSessionCommand.omit({
  type: true,
  id: true,
  sessionId: true,
  ts: true,
  traceparent: true,
  tracestate: true,
});
export type ScheduleCreateOptions = z.infer<typeof ScheduleCreateOptions>;

/**
 * What a fire does:
 * - `new_session`: `create_session` (with `create`) then `prompt {text: prompt}` into a new session
 *   whose id derives from the slot (`fireSessionId`);
 * - `session`: `prompt {text: prompt}` into the existing session `sessionId` (`follow_up` when the
 *   overlap policy `allow_all` fires while the previous fire's run is still open).
 */
export const ScheduleTarget = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("new_session"),
    create: ScheduleCreateOptions.optional(),
    prompt: z
      .string()
      .min(1)
      .max(256 * 1024),
  }),
  z.object({
    kind: z.literal("session"),
    sessionId: SessionId,
    prompt: z
      .string()
      .min(1)
      .max(256 * 1024),
  }),
]);
export type ScheduleTarget = z.infer<typeof ScheduleTarget>;

/**
 * What a slot does while the previous fire's run is still open (Temporal's names):
 * `skip` (default) records it skipped; `buffer_one` keeps one slot and fires it once the run closed
 * (a later one is skipped `buffer_full`); `allow_all` fires anyway; `cancel_other` aborts the open run
 * and fires the slot once it closed.
 */
export const OverlapPolicy = z.enum(["skip", "buffer_one", "allow_all", "cancel_other"]);
export type OverlapPolicy = z.infer<typeof OverlapPolicy>;

/** Default catch-up window: a slot found due later than this after its time is recorded missed. */
export const DEFAULT_CATCHUP_WINDOW_MS = 60_000;
/** The smallest catch-up window (Temporal's minimum). */
export const MIN_CATCHUP_WINDOW_MS = 10_000;

/** A schedule as created. Immutable but for pause and resume. */
export const ScheduleDefinition = z
  .object({
    scheduleId: ScheduleId,
    spec: ScheduleSpec,
    target: ScheduleTarget,
    overlap: OverlapPolicy.default("skip"),
    catchupWindowMs: z.number().int().min(MIN_CATCHUP_WINDOW_MS).default(DEFAULT_CATCHUP_WINDOW_MS),
    /** No slot before this instant. */
    startAt: EpochMs.optional(),
    /** No slot after this instant. */
    endAt: EpochMs.optional(),
    /** Created paused: no slot fires until `resume`. */
    paused: z.boolean().optional(),
    note: z.string().max(1024).optional(),
  })
  .refine((d) => d.startAt === undefined || d.endAt === undefined || d.startAt <= d.endAt, {
    message: "startAt must not be after endAt",
  });
export type ScheduleDefinition = z.infer<typeof ScheduleDefinition>;
export type ScheduleDefinitionInput = z.input<typeof ScheduleDefinition>;

/** A trigger's id (its event's id) becomes part of a session id. */
export const TRIGGER_ID_PATTERN = /^[A-Za-z0-9_-]{1,60}$/;

/** A slot: a nominal time of the spec, or a manual trigger (`trigger` = its event id, `at` = when asked). */
export const ScheduleSlot = z.object({ at: EpochMs, trigger: z.string().regex(TRIGGER_ID_PATTERN).optional() });
export type ScheduleSlot = z.infer<typeof ScheduleSlot>;

/** On every schedule event. `producer`: the scheduler's worker id, or the client that wrote it. */
export const ScheduleEventMeta = z.object({
  v: z.literal(1),
  id: z.string().min(1).max(256),
  scheduleId: ScheduleId,
  ts: EpochMs,
  producer: z.string().min(1).max(256),
});
export type ScheduleEventMeta = z.infer<typeof ScheduleEventMeta>;

const ev = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) =>
  z.object({ type: z.literal(type), ...shape, meta: ScheduleEventMeta });

/** Why a slot did not fire. */
export const SkipReason = z.enum(["overlap", "buffer_full"]);
export type SkipReason = z.infer<typeof SkipReason>;

export const ScheduleEvent = z.discriminatedUnion("type", [
  ev("schedule_created", { definition: ScheduleDefinition }),
  ev("schedule_paused", { note: z.string().max(1024).optional(), by: z.string().max(256).optional() }),
  ev("schedule_resumed", { by: z.string().max(256).optional() }),
  /** A manual slot at `meta.ts`, fired by the scheduler under the overlap policy like any other. */
  ev("schedule_triggered", { by: z.string().max(256).optional() }),
  /**
   * The slot's command(s) were stored in FLEET_COMMANDS: `commandId` (derived from the slot) on
   * `sessionId`; `commandSeq` is the stream sequence of the run-starting command.
   */
  ev("schedule_fired", {
    slot: ScheduleSlot,
    commandId: z.string(),
    commandType: z.enum(["prompt", "follow_up"]),
    sessionId: SessionId,
    commandSeq: z.number().int().positive(),
    /** The session's last stream sequence before the fire: its outcome is looked for after it. */
    afterSeq: z.number().int().nonnegative().optional(),
  }),
  /** The slot waits for the previous fire's run to close (`buffer_one`, `cancel_other`). */
  ev("schedule_buffered", { slot: ScheduleSlot, blockedBy: z.string() }),
  /** `cancel_other` asked the previous fire's run to stop (`abort`, id `<its commandId>.abort`). */
  ev("schedule_cancel_requested", { commandId: z.string(), sessionId: SessionId }),
  ev("schedule_skipped", { slot: ScheduleSlot, reason: SkipReason, blockedBy: z.string() }),
  /**
   * Slots from `slot.at` through `lastAt` (`count` of them) were due longer ago than the catch-up
   * window when a scheduler found them (it was down, or the tenant's scheduler was not running).
   */
  ev("schedule_missed", {
    slot: ScheduleSlot,
    lastAt: EpochMs,
    count: z.number().int().positive(),
    reason: z.literal("catchup_window"),
  }),
  /**
   * The slot could not be fired and will not be (`reason` says why), or its fire's command was
   * refused by the session (`commandId` set; `reason` is `<code>: <the rejection's reason>`).
   */
  ev("schedule_failed", { slot: ScheduleSlot, reason: z.string().max(2048), commandId: z.string().optional() }),
]);
export type ScheduleEvent = z.infer<typeof ScheduleEvent>;
export type ScheduleEventType = ScheduleEvent["type"];
export type ScheduleEventOf<T extends ScheduleEventType> = Extract<ScheduleEvent, { type: T }>;

/** The events that record a slot's outcome (the history). */
export const SLOT_OUTCOMES = [
  "schedule_fired",
  "schedule_buffered",
  "schedule_skipped",
  "schedule_missed",
  "schedule_failed",
] as const satisfies readonly ScheduleEventType[];
export type SlotOutcomeEvent = ScheduleEventOf<(typeof SLOT_OUTCOMES)[number]>;

/** Management commands, decided by `decideScheduleCommand` against the schedule's log. */
export const ScheduleCommand = z.discriminatedUnion("type", [
  z.object({ type: z.literal("create"), definition: ScheduleDefinition }),
  z.object({ type: z.literal("pause"), note: z.string().max(1024).optional(), by: z.string().max(256).optional() }),
  z.object({ type: z.literal("resume"), by: z.string().max(256).optional() }),
  z.object({ type: z.literal("trigger"), by: z.string().max(256).optional() }),
]);
export type ScheduleCommand = z.infer<typeof ScheduleCommand>;
