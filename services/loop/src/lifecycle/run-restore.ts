// Carries out a restore (`restore_session`) accepted in the log: a resumable sequence of idempotent
// steps (PROTOCOL "Session lifecycle").
import {
  type ArchiveRef,
  type DaySpend,
  type FleetEvent,
  type LifecycleRecord,
  type ParsedArchive,
  parseArchive,
} from "@fleet/protocol";
import type { LifecycleDeps } from "./lifecycle-deps.js";
import { lastLifecycleRecord, publishLifecycleRecord } from "./lifecycle-records.js";

export interface RestoreTarget {
  sessionId: string;
  /** The restore's command. */
  commandId: string;
  by: string;
  /** `ts` of the command's `command_accepted`. */
  requestedAt: number;
  archive: ArchiveRef;
  /** Events in the log after the restore's `command_accepted` (the archived events appended so far). */
  appended: () => number;
  /** The restore's `session_restored` is in the log. */
  restored: () => boolean;
  /** Appends an archived event as it is (no `owner_change` before it), under `msgId`. */
  append: (event: FleetEvent, msgId: string) => Promise<void>;
  /** Appends `session_restored {archive, events}` as the command's event. */
  appendRestored: (events: number) => Promise<void>;
  /**
   * Writes the session's spend records of its recent days (its restored events counted no spend one
   * by one); the day totals already count `counted` (the archive's spend), which its deletion left.
   */
  recordSpend: (counted: readonly DaySpend[]) => Promise<void>;
  /** Aborted when the writer lets the session go (lease lost, shutdown): no further step is taken. */
  signal: AbortSignal;
}

/**
 * Runs every step not yet done, in order, and resolves with the lifecycle record: the archived
 * events not yet in the log are appended (each with msgID `<eventId>.r.<commandId>`: the stream
 * still remembers the original ids for its duplicate window), then `session_restored`, then the
 * session's spend records; the spend comes out of the ledger (once); the lifecycle record; the
 * ledger is settled; the archive is removed (the log holds it all again). Until the record is
 * written every step runs again on resume; after it, only the last two. Rejects when a step fails
 * (the caller retries), or when the archive is gone before the events are back.
 */
export async function runRestore(target: RestoreTarget, deps: LifecycleDeps): Promise<LifecycleRecord> {
  const { sessionId, commandId } = target;
  const log = deps.logger.child({ sessionId, commandId, op: "restore" });
  const step = async (name: string) => {
    log.debug({ evt: "lifecycle_step", step: name }, "lifecycle step done");
    await deps.halt("restore", name, sessionId);
    target.signal.throwIfAborted();
  };
  let parsed: ParsedArchive | null | undefined;
  const archive = async (): Promise<ParsedArchive | null> => {
    if (parsed !== undefined) return parsed;
    const text = await deps.archive.read(sessionId);
    if (text === null) {
      parsed = null;
      return parsed;
    }
    const decoded = parseArchive(text);
    if (!decoded.ok) throw new Error(`archive of ${sessionId} is unreadable: ${decoded.error}`);
    parsed = decoded.value;
    return parsed;
  };
  const required = async () => {
    const a = await archive();
    if (!a) throw new Error(`the archive of ${sessionId} is gone before its restore finished`);
    return a;
  };
  await step("accepted");
  let record = await lastLifecycleRecord(deps.jsm, sessionId, deps.groups);
  if (record?.type !== "session_restored" || record.commandId !== commandId) {
    const { header, events } = await required();
    if (!target.restored()) {
      const half = Math.floor(events.length / 2);
      for (let i = target.appended(); i < events.length; i++) {
        const event = events[i] as FleetEvent;
        await target.append(event, `${event.meta.id}.r.${commandId}`);
        if (i + 1 === half) await step("events_partial");
      }
      await step("events");
      await target.appendRestored(events.length);
      await step("restored");
    }
    await target.recordSpend(header.spend);
    await deps.ledger.apply(commandId, header.spend, -1);
    await step("ledger_unrolled");
    record = {
      type: "session_restored",
      v: 1,
      sessionId,
      commandId,
      by: target.by,
      requestedAt: target.requestedAt,
      ts: deps.now(),
      producer: deps.workerId,
      events: events.length,
      archive: target.archive,
    };
    await publishLifecycleRecord(deps.publisher, record, deps.groups);
    log.info({ evt: "session_restored", events: events.length }, "session restored");
    await step("recorded");
  }
  // An archive written after this restore began is a later archive's, not this restore's to remove.
  const left = await archive();
  if (left && left.header.archivedAt <= target.requestedAt) {
    await deps.ledger.settle(
      commandId,
      left.header.spend.map((s) => s.day),
    );
    await step("ledger_settled");
    await deps.archive.remove(sessionId);
  }
  await step("archive_removed");
  return record;
}
