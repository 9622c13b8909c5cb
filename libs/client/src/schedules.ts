// The SDK's schedules (PROTOCOL "Schedules", change 55): each management call reads the schedule's
// log, decides with `decideScheduleCommand` and appends the events guarded by the log's last
// sequence, so two clients (or a client and the scheduler) never overwrite each other.
import {
  decideScheduleCommand,
  foldSchedule,
  isScheduleId,
  projectScheduleView,
  SCHEDULE_ID_PATTERN,
  type ScheduleCommand,
  ScheduleDefinition,
  type ScheduleDefinitionInput,
  type ScheduleEvent,
  type ScheduleView,
  validate,
} from "@fleet/protocol";
import {
  appendScheduleEvent,
  isWrongLastSequence,
  listScheduleIds,
  purgeScheduleLog,
  readScheduleLog,
  type ScheduleRecord,
} from "@fleet/runtime";
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { FleetError, isFleetError } from "./errors.js";
import { newId } from "./ids.js";
import { describeError, isPermissionDenied } from "./nats-failures.js";

export type { ScheduleView };

/** One slot outcome or management event of a schedule's log, with its stream sequence. */
export type ScheduleHistoryItem = ScheduleRecord;

export interface ScheduleCallOptions {
  /** Recorded as `by` on pause, resume and trigger. */
  by?: string;
}

/**
 * Schedules of the connected tenant.
 * Contract: calls throw `FleetError` kind `invalid_input` (a definition that fails its schema),
 * `rejected` with code `not_found`, `conflict` or `invalid` (the decider's refusal), or `unavailable`
 * (FLEET_SCHEDULES cannot be read or written).
 */
export class ScheduleClient {
  readonly #js: JetStreamClient;
  readonly #jsm: JetStreamManager;
  readonly #now: () => number;
  readonly #producer: string;

  constructor(js: JetStreamClient, jsm: JetStreamManager, opts: { now?: () => number; producer?: string } = {}) {
    this.#js = js;
    this.#jsm = jsm;
    this.#now = opts.now ?? Date.now;
    this.#producer = opts.producer ?? "client";
  }

  /** Creates a schedule; `conflict` when the id exists. Returns its view. */
  async create(definition: ScheduleDefinitionInput): Promise<ScheduleView> {
    const parsed = validate(ScheduleDefinition, definition);
    if (!parsed.ok) throw new FleetError("invalid_input", "invalid", `schedule: ${parsed.error}`);
    await this.#apply(parsed.value.scheduleId, { type: "create", definition: parsed.value });
    return this.get(parsed.value.scheduleId);
  }

  /** The schedule's view (next fires, last fire, counts); `rejected`/`not_found` when there is none. */
  async get(scheduleId: string): Promise<ScheduleView> {
    const { records } = await this.#read(scheduleId);
    const view = projectScheduleView(foldSchedule(records.map((r) => r.event)), this.#now());
    if (!view) throw notFound(scheduleId);
    return view;
  }

  /** Every schedule of the tenant, by id. */
  async list(): Promise<ScheduleView[]> {
    const ids = await this.#call(() => listScheduleIds(this.#jsm));
    const views = await Promise.all(ids.map((id) => this.get(id).catch(() => undefined)));
    return views.filter((v): v is ScheduleView => v !== undefined);
  }

  pause(scheduleId: string, opts: ScheduleCallOptions & { note?: string } = {}): Promise<ScheduleView> {
    return this.#applyAndGet(scheduleId, { type: "pause", ...opts });
  }

  resume(scheduleId: string, opts: ScheduleCallOptions = {}): Promise<ScheduleView> {
    return this.#applyAndGet(scheduleId, { type: "resume", ...opts });
  }

  /** Asks for a fire now: the scheduler fires it under the overlap policy, paused or not. Returns the trigger's id. */
  async trigger(scheduleId: string, opts: ScheduleCallOptions = {}): Promise<{ triggerId: string }> {
    const events = await this.#apply(scheduleId, { type: "trigger", ...opts });
    return { triggerId: events[0]?.meta.id ?? "" };
  }

  /** Deletes the schedule and its history (its subject is purged); `not_found` when there is none. */
  async remove(scheduleId: string): Promise<void> {
    const { records } = await this.#read(scheduleId);
    if (!records.some((r) => r.event.type === "schedule_created")) throw notFound(scheduleId);
    await this.#call(() => purgeScheduleLog(this.#jsm, scheduleId));
  }

  /**
   * The schedule's log, newest first: slot outcomes (`schedule_fired`, `_skipped`, `_buffered`,
   * `_missed`, `_failed`) and management events; at most `limit` (default 100).
   */
  async history(scheduleId: string, opts: { limit?: number } = {}): Promise<ScheduleHistoryItem[]> {
    const { records } = await this.#read(scheduleId);
    if (!records.some((r) => r.event.type === "schedule_created")) throw notFound(scheduleId);
    return records.reverse().slice(0, opts.limit ?? 100);
  }

  async #applyAndGet(scheduleId: string, command: ScheduleCommand): Promise<ScheduleView> {
    await this.#apply(scheduleId, command);
    return this.get(scheduleId);
  }

  async #apply(scheduleId: string, command: ScheduleCommand): Promise<ScheduleEvent[]> {
    for (let attempt = 0; ; attempt++) {
      const { records, lastSeq } = await this.#read(scheduleId);
      const now = this.#now();
      const decided = decideScheduleCommand(foldSchedule(records.map((r) => r.event)), command, now);
      if (!decided.ok) {
        const { code, message } = decided.rejection;
        throw new FleetError("rejected", code, `schedule ${scheduleId}: ${message}`);
      }
      const events = decided.events.map(
        (body) =>
          ({ ...body, meta: { v: 1, id: newId(), scheduleId, ts: now, producer: this.#producer } }) as ScheduleEvent,
      );
      try {
        let seq = lastSeq;
        for (const event of events) seq = await appendScheduleEvent(this.#js, event, seq);
        return events;
      } catch (err) {
        if (isWrongLastSequence(err) && attempt < 5) continue;
        throw unavailable(err);
      }
    }
  }

  #read(scheduleId: string) {
    if (!isScheduleId(scheduleId))
      throw new FleetError(
        "invalid_input",
        "invalid",
        `schedule id ${JSON.stringify(scheduleId)}: must match ${SCHEDULE_ID_PATTERN}`,
      );
    return this.#call(() => readScheduleLog(this.#jsm, scheduleId));
  }

  async #call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (isFleetError(err)) throw err;
      throw unavailable(err);
    }
  }
}

const notFound = (scheduleId: string) => new FleetError("rejected", "not_found", `no schedule ${scheduleId}`);
const unavailable = (err: unknown) =>
  isPermissionDenied(err)
    ? new FleetError(
        "unavailable",
        "permission",
        `this login may not change schedules (an operator's may): ${describeError(err)}`,
        { cause: err },
      )
    : new FleetError("unavailable", "stream", `cannot use FLEET_SCHEDULES (${describeError(err)})`, { cause: err });
