// The chaos run's schedule (issue 29): every CHAOS_SCHEDULE_EVERY_MS a new session gets a prompt,
// through every fault of the run (the loop worker holding `loop.scheduler` among them). After the run
// the suite waits for every slot to have its outcome and every fired session's run to end, then
// reads the schedule's log and the slots' sessions for the checks.
import { type FleetClient, isFleetError } from "@fleet/client";
import { fireSessionId, type ScheduleDefinition, type ScheduleEvent } from "@fleet/protocol";
import { openRuns } from "./checks/check-liveness.js";
import { type ScheduleRun, scheduleSlots } from "./checks/check-schedule.js";
import { collectSession, type SessionRecords } from "./collect.js";

export const CHAOS_SCHEDULE_EVERY_MS = 5_000;
/** The smallest window the contract allows but one: slots found later than this are recorded missed. */
export const CHAOS_SCHEDULE_CATCHUP_MS = 30_000;
/** How long after the faults the suite waits for the slots' outcomes and the fired runs' ends. */
const SETTLE_MS = 90_000;

export interface ChaosScheduleResult {
  run: ScheduleRun;
  /** The fired slots' sessions, collected like the workload's. */
  fired: SessionRecords[];
  /** Slots whose outcomes or runs had not settled when the suite stopped waiting. */
  unsettled: number;
}

/**
 * Creates the run's `every` schedule: `buffer_one` (a slot due while the previous fire's run is open
 * waits for it, a second one is skipped), no slot after `endAt`. Retried while NATS is unavailable.
 */
export async function createChaosSchedule(client: FleetClient, seed: number, endAt: number) {
  const definition = {
    scheduleId: `chaos-${seed}-every`,
    spec: { kind: "every" as const, everyMs: CHAOS_SCHEDULE_EVERY_MS },
    target: { kind: "new_session" as const, prompt: `chaos scheduled (seed ${seed})` },
    overlap: "buffer_one" as const,
    catchupWindowMs: CHAOS_SCHEDULE_CATCHUP_MS,
    endAt,
    note: "npm run chaos",
  };
  for (let attempt = 1; ; attempt++) {
    try {
      return await client.schedules.create(definition);
    } catch (err) {
      if (attempt >= 5 || !isFleetError(err) || err.kind !== "unavailable") throw err;
      await new Promise((r) => setTimeout(r, 1_000));
    }
  }
}

/**
 * Waits (at most SETTLE_MS) until every slot up to now has a final outcome and every fired session's
 * runs ended, then returns what the checks read.
 */
export async function readChaosSchedule(
  client: FleetClient,
  workspace: string,
  scheduleId: string,
  log: (line: string) => void,
): Promise<ChaosScheduleResult> {
  const deadline = Date.now() + SETTLE_MS;
  for (;;) {
    const result = await readOnce(client, workspace, scheduleId, Date.now() > deadline);
    if (result.unsettled === 0 || Date.now() > deadline) return result;
    log(`  schedule ${scheduleId}: ${result.unsettled} slots not settled yet`);
    await new Promise((r) => setTimeout(r, 2_000));
  }
}

/** Reads the schedule's log, then (once every slot has its outcome, or `force`) the slots' sessions. */
async function readOnce(
  client: FleetClient,
  workspace: string,
  scheduleId: string,
  force: boolean,
): Promise<ChaosScheduleResult> {
  const readAt = Date.now();
  const events = (await client.schedules.history(scheduleId, { limit: 1_000_000 })).map((r) => r.event).reverse();
  const created = events.find(
    (e): e is Extract<ScheduleEvent, { type: "schedule_created" }> => e.type === "schedule_created",
  );
  if (!created) throw new Error(`schedule ${scheduleId} has no schedule_created`);
  const definition: ScheduleDefinition = created.definition;
  const createdAt = created.meta.ts;
  const slots = scheduleSlots(definition, createdAt, readAt);
  const firedSessions = new Set(events.flatMap((e) => (e.type === "schedule_fired" ? [e.sessionId] : [])));
  const sessions = new Map<string, SessionRecords["log"]>();
  const fired: SessionRecords[] = [];
  const finalSlots = new Set<number>();
  for (const e of events) {
    if (e.type === "schedule_fired" || e.type === "schedule_skipped") finalSlots.add(e.slot.at);
    if (e.type === "schedule_failed" && e.commandId === undefined) finalSlots.add(e.slot.at);
    if (e.type === "schedule_missed") for (const s of slots) if (s >= e.slot.at && s <= e.lastAt) finalSlots.add(s);
  }
  let unsettled = slots.filter((s) => !finalSlots.has(s)).length;
  const run = { definition, createdAt, readAt, events, sessions };
  if (unsettled > 0 && !force) return { run, fired, unsettled };
  for (const at of slots) {
    const sessionId = fireSessionId(scheduleId, { at });
    if (firedSessions.has(sessionId)) {
      const records = await collectSession(client, workspace, sessionId);
      fired.push(records);
      sessions.set(sessionId, records.log);
      if (openRuns(records.log).length > 0) unsettled++;
    } else if ((await client.lastSeq(sessionId)) > 0) {
      // A session for a slot recorded as not fired: kept for the check to name it.
      sessions.set(sessionId, (await collectSession(client, workspace, sessionId)).log);
    }
  }
  return { run, fired, unsettled };
}
