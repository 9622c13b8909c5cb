// Reading and appending a schedule's log `fleet.sched.<scheduleId>` on FLEET_SCHEDULES (change 55):
// direct gets only (no consumer per read), appends guarded by the subject's last sequence.
import {
  decodeScheduleEvent,
  encodeScheduleEvent,
  parseScheduleSubject,
  type ScheduleEvent,
  STREAMS,
  subjects,
} from "@fleet/protocol";
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";

const STREAM = STREAMS.schedules.name;

export interface ScheduleRecord {
  seq: number;
  event: ScheduleEvent;
}

/**
 * The schedule's events from `fromSeq` (stream sequence, inclusive) on, in order, and the last
 * sequence read (`fromSeq - 1` when none). A message that does not decode is skipped (counted in
 * `skipped`): the log is written only through `encodeScheduleEvent`.
 */
export async function readScheduleLog(
  jsm: JetStreamManager,
  scheduleId: string,
  fromSeq = 1,
): Promise<{ records: ScheduleRecord[]; lastSeq: number; skipped: number }> {
  const subject = subjects.schedule(scheduleId);
  const records: ScheduleRecord[] = [];
  let seq = fromSeq;
  let lastSeq = fromSeq - 1;
  let skipped = 0;
  for (;;) {
    const msg = await jsm.direct.getMessage(STREAM, { seq, next_by_subj: subject });
    if (!msg) break;
    lastSeq = msg.seq;
    seq = msg.seq + 1;
    const decoded = decodeScheduleEvent(msg.data);
    if (decoded.ok) records.push({ seq: msg.seq, event: decoded.value });
    else skipped++;
  }
  return { records, lastSeq, skipped };
}

/** Every schedule with a log: one stream-info request for the stream's subjects. */
export async function listScheduleIds(jsm: JetStreamManager): Promise<string[]> {
  const info = await jsm.streams.info(STREAM, { subjects_filter: subjects.schedulesAll });
  return Object.keys((info.state.subjects ?? {}) as Record<string, number>)
    .map(parseScheduleSubject)
    .filter((id): id is string => id !== null)
    .sort();
}

/**
 * Appends `event` if the schedule's last sequence is still `expectedSeq` (0: an empty subject), with
 * `Nats-Msg-Id` = its `meta.id`. Throws what nats.js throws: a 10071 (`isWrongLastSequence`) means
 * someone else appended first; re-read and decide again.
 */
export async function appendScheduleEvent(
  js: JetStreamClient,
  event: ScheduleEvent,
  expectedSeq: number,
): Promise<number> {
  const encoded = encodeScheduleEvent(event);
  if (!encoded.ok) throw new Error(`schedule event ${event.type}: ${encoded.error}`);
  const ack = await js.publish(subjects.schedule(event.meta.scheduleId), encoded.bytes, {
    msgID: event.meta.id,
    expect: { lastSubjectSequence: expectedSeq },
  });
  return ack.seq;
}

/** Removes a schedule's log (its definition and history). */
export async function purgeScheduleLog(jsm: JetStreamManager, scheduleId: string): Promise<number> {
  const r = await jsm.streams.purge(STREAM, { filter: subjects.schedule(scheduleId) });
  return r.purged;
}
