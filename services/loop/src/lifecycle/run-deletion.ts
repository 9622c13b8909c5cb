// Carries out a deletion (`delete_session`, `archive_session`) whose tombstone is in the log: a
// resumable sequence of idempotent steps (PROTOCOL "Session lifecycle").
import {
  type ArchivedRecord,
  type DaySpend,
  decodeEvent,
  type EventOf,
  encodeArchive,
  eventStreamOfPartition,
  eventStreamOfSubject,
  exportPiJsonl,
  type FleetEvent,
  foldSessionTreeEvents,
  groupOf,
  type LifecycleRecord,
  OBJECT_STORES,
  removalRecordType,
  STREAMS,
  storeGroupConsumer,
  subjects,
} from "@fleet/protocol";
import { readSubject, sleep } from "@fleet/runtime";
import { sessionBlobNames } from "./blob-refs.js";
import type { LifecycleDeps } from "./lifecycle-deps.js";
import { lastLifecycleRecord, publishLifecycleRecord } from "./lifecycle-records.js";
import { removeObject } from "./remove-object.js";

export interface DeletionTarget {
  sessionId: string;
  partition: number;
  /** The deletion's command. */
  commandId: string;
  tombstone: EventOf<"session_deleting">;
  /** Stream sequence of the command's `command_accepted`: everything before it is the session's history. */
  acceptSeq: number;
  /** Stream sequence of the tombstone. */
  tombstoneSeq: number;
  /** The subject's last sequence as its writer knows it (the final purge removes up to it). */
  lastSeq: () => number;
  /** Aborted when the writer lets the session go (lease lost, shutdown): no further step is taken. */
  signal: AbortSignal;
}

const DEFAULT_STORE_ABSENT_MS = 30_000;

/**
 * Runs every step not yet done, in order, and resolves with the lifecycle record. Steps:
 * archive (history before `acceptSeq` to the archive), blobs, tool results, spend rolled into the
 * ledger and the session's spend records removed, history purged (the outcome and the tombstone
 * stay) and the session's snapshot removed, the store has applied the tombstone (its projection
 * is gone), the lifecycle record, the
 * ledger settled, the tombstone purged. Until the record is written every step runs again on
 * resume (each is idempotent; the ledger applies an operation once); after it, only the last two.
 * Purges are bounded by sequences this writer knows, so a deposed writer cannot remove a newer
 * session of the same id. Rejects when a step fails (the caller retries).
 */
export async function runDeletion(target: DeletionTarget, deps: LifecycleDeps): Promise<LifecycleRecord> {
  const { sessionId, commandId, tombstone } = target;
  const log = deps.logger.child({ sessionId, commandId, op: tombstone.op });
  const step = async (name: string) => {
    log.debug({ evt: "lifecycle_step", step: name }, "lifecycle step done");
    await deps.halt(tombstone.op, name, sessionId);
    target.signal.throwIfAborted();
  };
  const subject = subjects.event(target.partition, sessionId);
  const stream = eventStreamOfPartition(target.partition, deps.groups ?? 1);
  const days = tombstone.spend.map((s) => s.day);
  await step("accepted");
  let record = await lastLifecycleRecord(deps.jsm, sessionId, deps.groups);
  if (record?.commandId !== commandId) {
    const history = await readHistory(deps, subject, target.acceptSeq);
    if (tombstone.op === "archive" && history.length > 0) await writeArchive(deps, target, history);
    await step("archived");
    for (const name of sessionBlobNames(
      sessionId,
      history.map((h) => h.event),
    )) {
      await removeObject(deps.blobs, deps.jsm, OBJECT_STORES.blobs.name, name);
    }
    await step("blobs");
    await deps.jsm.streams.purge(STREAMS.toolResults.name, { filter: subjects.toolResultsOfSession(sessionId) });
    await step("tool_results");
    await deps.ledger.apply(commandId, tombstone.spend, 1);
    await deps.ledger.closeSession(sessionId, target.partition, tombstone.spend, tombstone.events);
    await step("spend_rolled");
    await deps.jsm.streams.purge(stream, { filter: subject, seq: target.acceptSeq });
    // The fold's snapshots go with the events they were made from.
    await deps.snapshots?.remove(sessionId);
    await step("events_purged");
    await waitForStore(deps, target.partition, target.tombstoneSeq, target.signal, log);
    await step("projection");
    record = removalRecord(target, deps, tombstone.spend);
    await publishLifecycleRecord(deps.publisher, record, deps.groups);
    log.info({ evt: "session_removed", type: record.type, events: record.events }, "session removed");
    await step("recorded");
  }
  await deps.ledger.settle(commandId, days);
  await step("ledger_settled");
  // A spend record written late (a budget write still in flight at the deletion) goes too.
  await deps.ledger.removeSessionRecords(sessionId, days);
  await deps.jsm.streams.purge(stream, { filter: subject, seq: target.lastSeq() + 1 });
  await step("tombstone_purged");
  return record;
}

interface HistoryRecord extends ArchivedRecord {
  event: FleetEvent;
}

/** The session's events before its deletion's outcome, as stored (empty once they are purged). */
async function readHistory(deps: LifecycleDeps, subject: string, acceptSeq: number): Promise<HistoryRecord[]> {
  const out: HistoryRecord[] = [];
  if (acceptSeq <= 1) return out;
  const stream = eventStreamOfSubject(subject, deps.groups ?? 1);
  for await (const rec of readSubject(deps.js, deps.jsm, stream, subject, { toSeq: acceptSeq - 1 })) {
    const decoded = decodeEvent(rec.data);
    if (decoded.ok) out.push({ seq: rec.seq, data: rec.data, event: decoded.value });
  }
  return out;
}

async function writeArchive(deps: LifecycleDeps, target: DeletionTarget, history: HistoryRecord[]): Promise<void> {
  const events = history.map((h) => h.event);
  const tree = foldSessionTreeEvents(events);
  const header = {
    format: "fleet-archive" as const,
    v: 1 as const,
    sessionId: target.sessionId,
    commandId: target.commandId,
    by: target.tombstone.by,
    archivedAt: deps.now(),
    events: history.length,
    firstSeq: history[0]?.seq ?? 0,
    lastSeq: history.at(-1)?.seq ?? 0,
    spend: target.tombstone.spend,
  };
  await deps.archive.write(target.sessionId, {
    events: encodeArchive(header, history),
    pi: exportPiJsonl({
      sessionId: target.sessionId,
      createdAt: events[0]?.meta.ts ?? 0,
      entries: tree.entries,
      leafId: tree.leafId,
    }),
  });
}

function removalRecord(target: DeletionTarget, deps: LifecycleDeps, spend: DaySpend[]): LifecycleRecord {
  const { tombstone } = target;
  const common = {
    v: 1 as const,
    sessionId: target.sessionId,
    commandId: target.commandId,
    by: tombstone.by,
    requestedAt: tombstone.meta.ts,
    ts: deps.now(),
    producer: deps.workerId,
    events: tombstone.events,
    spend,
  };
  const type = removalRecordType(tombstone.op);
  if (type === "session_archived") {
    return { type, ...common, archive: tombstone.archive ?? deps.archive.ref(target.sessionId) };
  }
  return { type, ...common };
}

/**
 * Waits until the session store's consumer of the partition's group (`store-g<g>`) has acknowledged `seq` (it applies a
 * batch before acknowledging it, so the tombstone's removal of the projection is done): its ack
 * floor is at `seq` or later, or it has delivered `seq` and has nothing unacknowledged. A partition
 * with no store consumer for `storeAbsentMs` has no projection to wait for.
 */
async function waitForStore(
  deps: LifecycleDeps,
  partition: number,
  seq: number,
  signal: AbortSignal,
  log: LifecycleDeps["logger"],
): Promise<void> {
  const groups = deps.groups ?? 1;
  const name = storeGroupConsumer(groupOf(partition, groups)).durable_name;
  const stream = eventStreamOfPartition(partition, groups);
  const absentMs = deps.storeAbsentMs ?? DEFAULT_STORE_ABSENT_MS;
  const started = deps.now();
  let missingSince: number | undefined;
  let warnedAt = started;
  let delay = 25;
  for (;;) {
    try {
      const info = await deps.jsm.consumers.info(stream, name);
      // After a purge nats-server 2.9 may leave the ack floor's stream sequence behind a consumer
      // that acknowledged everything; then nothing pending and `seq` delivered says the same.
      const acked = info.num_ack_pending === 0 && info.delivered.stream_seq >= seq;
      if (info.ack_floor.stream_seq >= seq || acked) return;
      missingSince = undefined;
    } catch (err) {
      if (!/consumer not found/i.test((err as Error).message)) throw err;
      missingSince ??= deps.now();
      if (deps.now() - missingSince >= absentMs) {
        log.warn(
          { evt: "lifecycle_no_store", partition },
          "no session store consumes this partition; no projection to remove",
        );
        return;
      }
    }
    if (deps.now() - warnedAt >= 30_000) {
      warnedAt = deps.now();
      log.warn(
        { evt: "lifecycle_waiting_store", partition, seq },
        "waiting for the session store to apply the deletion",
      );
    }
    await sleep(delay, signal);
    signal.throwIfAborted();
    delay = Math.min(delay * 2, 1_000);
  }
}
