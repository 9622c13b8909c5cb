// The tenant's scheduler (PROTOCOL "Schedules", change 55): one per tenant, on the loop worker holding
// the lease `loop.scheduler`. Every tick it reads what was appended to each schedule's log since the
// last tick, and takes the decider's steps one at a time: publish the fire's commands (ids derived
// from the slot, so a repeat is deduplicated), then append the outcome guarded by the log's last
// sequence. A step whose append loses the race is decided again from the log.
import {
  decideScheduleStep,
  EMPTY_SCHEDULE_STATE,
  encodeCommand,
  eventStreamOfPartition,
  evolveSchedule,
  type FleetCommand,
  partitionOf,
  resentCommandMsgId,
  type ScheduleEvent,
  type ScheduleEventBody,
  type ScheduleState,
  scheduleFireStep,
  slotHasOutcome,
  subjects,
} from "@fleet/protocol";
import {
  appendScheduleEvent,
  isWrongLastSequence,
  type Logger,
  lastSubjectSeq,
  listScheduleIds,
  readScheduleLog,
} from "@fleet/runtime";
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import { startLeasedTask } from "../leased-task.js";
import { findFireOutcome } from "./fire-outcome.js";
import { isFireOpen } from "./fire-probe.js";

/** The scheduler's lease key in `fleet_leases` (one holder per tenant, among the loop workers). */
export const SCHEDULER_LEASE_KEY = "loop.scheduler";

/**
 * A fire found dropped (its commands gone from FLEET_COMMANDS, no open work, no outcome in the
 * session's log: a loop worker failed to decide them and acked them, as it does when its lease or
 * the storage went mid-command) is re-sent at most this often and this many times per holder.
 */
const RESEND_EVERY_MS = 5_000;
const MAX_RESENDS = 10;

/** Steps one schedule may take in one tick (the rest wait for the next). */
const MAX_STEPS_PER_TICK = 50;
/** Appends of one step's outcome tried against a log that others append to meanwhile. */
const RECORD_ATTEMPTS = 5;

export interface Scheduler {
  start(): Promise<void>;
  /** One pass over every schedule now (tests and the timer); passes never overlap. Never throws. */
  tick(): Promise<void>;
  stop(): Promise<void>;
  /** Whether this worker holds the scheduler lease. */
  holds(): boolean;
}

interface Cached {
  state: ScheduleState;
  lastSeq: number;
}

export function startScheduler(opts: {
  js: JetStreamClient;
  jsm: JetStreamManager;
  leases: KV;
  workerId: string;
  leaseTtlMs: number;
  partitions: number;
  /** K, the event log's stream groups (default 1). */
  groups?: number;
  tickMs: number;
  now: () => number;
  newId: () => string;
  logger: Logger;
  /**
   * Fault injection for crash tests (`FLEET_SCHEDULER_HALT_AFTER=fire_published`): after a fire's
   * commands are stored and before its outcome is appended, log `scheduler_halted` and stop there.
   */
  haltAfterPublish?: boolean;
}): Scheduler {
  const log = opts.logger.child({ component: "scheduler" });
  const cache = new Map<string, Cached>();
  /** Fires whose outcome this holder has looked up (bounded: one per schedule is kept). */
  const settled = new Set<string>();
  /** Re-sends of dropped fires by this holder: how many, and when the last was. */
  const resent = new Map<string, { count: number; at: number }>();

  async function refresh(scheduleId: string): Promise<Cached> {
    const cached = cache.get(scheduleId) ?? { state: EMPTY_SCHEDULE_STATE, lastSeq: 0 };
    const read = await readScheduleLog(opts.jsm, scheduleId, cached.lastSeq + 1);
    const next = {
      state: read.records.reduce((s, r) => evolveSchedule(s, r.event), cached.state),
      lastSeq: read.lastSeq,
    };
    cache.set(scheduleId, next);
    return next;
  }

  /** Publishes with msgID = the command's id, or `<id>#<seq>` for a re-send (PROTOCOL "Re-sending"). */
  async function publishCommand(command: FleetCommand, resendOf?: number): Promise<number> {
    const encoded = encodeCommand(command);
    if (!encoded.ok) throw new TerminalFireError(`the ${command.type} command cannot be sent: ${encoded.error}`);
    const subject = subjects.command(partitionOf(command.sessionId, opts.partitions), command.sessionId);
    const msgID = resendOf === undefined ? command.id : resentCommandMsgId(command.id, resendOf);
    const ack = await opts.js.publish(subject, encoded.bytes, { msgID });
    return ack.seq;
  }

  /**
   * Re-sends a dropped fire's commands (deduplicated among re-sends by `<id>#<commandSeq>`; the loop
   * decides such a copy once, as the command itself). False once this holder gave up on it.
   */
  async function resendFire(state: ScheduleState, fire: NonNullable<ScheduleState["lastFire"]>, slog: Logger) {
    const seen = resent.get(fire.commandId) ?? { count: 0, at: 0 };
    if (seen.count >= MAX_RESENDS) return false;
    if (opts.now() - seen.at < RESEND_EVERY_MS) return true;
    if (!state.definition || (await fenced())) return true;
    const step = scheduleFireStep(state, fire.slot, fire.commandType === "follow_up");
    for (const command of step.commands) await publishCommand(command, fire.commandSeq);
    resent.set(fire.commandId, { count: seen.count + 1, at: opts.now() });
    slog.warn(
      { evt: "schedule_fire_resent", commandId: fire.commandId, sessionId: fire.sessionId, resends: seen.count + 1 },
      "a fire's commands were dropped without an outcome; re-sent",
    );
    return true;
  }

  /** Whether this worker may still write: the lease is held and renewed (its write fence). */
  async function fenced(): Promise<boolean> {
    return !(await task.writable());
  }

  async function runSchedule(scheduleId: string) {
    let { state, lastSeq } = await refresh(scheduleId);
    const slog = log.child({ scheduleId });
    for (let i = 0; i < MAX_STEPS_PER_TICK; i++) {
      const last = state.lastFire;
      let open = last ? await isFireOpen(opts.jsm, opts.partitions, last) : false;
      let rejected: { code: string; reason: string } | undefined;
      if (last && !open && !last.failed && !settled.has(last.commandId)) {
        // Once per fire and holder: was its command refused by the session, or dropped undecided?
        const outcome = await findFireOutcome(
          opts.jsm,
          { partitions: opts.partitions, groups: opts.groups ?? 1 },
          last,
        );
        if (outcome === undefined && (await resendFire(state, last, slog))) open = true;
        else {
          settled.add(last.commandId);
          resent.delete(last.commandId);
          if (outcome && !outcome.accepted) rejected = { code: outcome.code, reason: outcome.reason };
        }
      }
      const now = opts.now();
      const step = decideScheduleStep(state, {
        now,
        lastFireOpen: open,
        ...(rejected ? { lastFireRejected: rejected } : {}),
      });
      if (!step) return;
      if (await fenced()) return;
      let body: ScheduleEventBody;
      if (step.kind === "fire") {
        try {
          const afterSeq = await lastSubjectSeq(
            opts.jsm,
            eventStreamOfPartition(partitionOf(step.sessionId, opts.partitions), opts.groups ?? 1),
            subjects.event(partitionOf(step.sessionId, opts.partitions), step.sessionId),
          );
          let seq = 0;
          for (const command of step.commands) seq = await publishCommand(command);
          if (opts.haltAfterPublish) {
            slog.warn(
              { evt: "scheduler_halted", commandId: step.commandId },
              "scheduler halted after a fire's publish",
            );
            await new Promise<void>(() => undefined);
          }
          body = {
            type: "schedule_fired",
            slot: step.slot,
            commandId: step.commandId,
            commandType: step.commandType,
            sessionId: step.sessionId,
            commandSeq: seq,
            afterSeq,
          };
        } catch (err) {
          if (!(err instanceof TerminalFireError)) throw err;
          body = { type: "schedule_failed", slot: step.slot, reason: err.message };
        }
      } else if (step.kind === "cancel") {
        await publishCommand(step.command);
        body = step.event;
      } else body = step.event;
      const event = {
        ...body,
        meta: { v: 1, id: opts.newId(), scheduleId, ts: now, producer: opts.workerId },
      } as ScheduleEvent;
      let recorded = false;
      for (let attempt = 0; attempt < RECORD_ATTEMPTS && !recorded; attempt++) {
        try {
          lastSeq = await appendScheduleEvent(opts.js, event, lastSeq);
          recorded = true;
        } catch (err) {
          if (!isWrongLastSequence(err)) throw err;
          // Someone appended first (a management command, or a deposed holder): read and decide
          // again; but a fire's commands are out, so its outcome is recorded after whatever came
          // meanwhile (a pause, say), unless the log already gives its slot one.
          ({ state, lastSeq } = await refresh(scheduleId));
          if (event.type !== "schedule_fired" || slotHasOutcome(state, event.slot) || (await fenced())) break;
        }
      }
      if (!recorded) continue;
      state = evolveSchedule(state, event);
      cache.set(scheduleId, { state, lastSeq });
      const slot = "slot" in event ? event.slot : undefined;
      slog.info(
        {
          evt: event.type,
          slot: slot && new Date(slot.at).toISOString(),
          ...(slot?.trigger ? { trigger: slot.trigger } : {}),
          ...("commandId" in event ? { commandId: event.commandId } : {}),
          ...("reason" in event ? { reason: event.reason } : {}),
        },
        "schedule slot",
      );
    }
  }

  async function pass() {
    const ids = await listScheduleIds(opts.jsm);
    for (const id of cache.keys()) if (!ids.includes(id)) cache.delete(id);
    const current = new Set([...cache.values()].flatMap((c) => (c.state.lastFire ? [c.state.lastFire.commandId] : [])));
    for (const id of settled) if (!current.has(id)) settled.delete(id);
    for (const id of resent.keys()) if (!current.has(id)) resent.delete(id);
    for (const id of ids) {
      if (!task.active()) return;
      try {
        await runSchedule(id);
      } catch (err) {
        log.warn({ evt: "schedule_tick_failed", scheduleId: id, err }, "schedule step failed; trying again next tick");
      }
    }
  }

  const task = startLeasedTask({
    kv: opts.leases,
    leaseKey: SCHEDULER_LEASE_KEY,
    workerId: opts.workerId,
    ttlMs: opts.leaseTtlMs,
    everyMs: opts.tickMs,
    now: opts.now,
    logger: log,
    pass,
    onAcquire: (epoch) => {
      // A new holder reads every log afresh: another holder may have appended meanwhile.
      cache.clear();
      log.info({ evt: "scheduler_acquired", epoch, tickMs: opts.tickMs }, "scheduler lease acquired");
    },
    onFailed: (err) => log.warn({ evt: "scheduler_pass_failed", err }, "scheduler pass failed; trying again"),
  });

  return { start: task.start, tick: task.run, holds: task.holds, stop: task.stop };
}

/** A fire that can never be sent as it is (recorded `schedule_failed`). */
class TerminalFireError extends Error {}
