// Loading a session's fold: its latest snapshot and the events after it, or the whole log when
// there is no usable snapshot (PROTOCOL change 42).
import {
  decodeEvent,
  EMPTY_TRACE_CURSOR,
  eventStreamOfPartition,
  evolveSession,
  type FleetEvent,
  initialSessionState,
  type SessionState,
  subjects,
  type TraceCursor,
} from "@fleet/protocol";
import { type Logger, lastSubjectSeq, readSubject, type StoredRecord } from "@fleet/runtime";
import type { JetStreamClient, JetStreamManager, StoredMsg } from "@nats-io/jetstream";
import { type LifecycleMarks, markLifecycle } from "../lifecycle/lifecycle-marks.js";
import type { SessionSnapshot } from "./snapshot-envelope.js";
import type { SnapshotMetrics } from "./snapshot-metrics.js";
import type { SnapshotRead, SnapshotStore } from "./snapshot-store.js";

/** Where a session's snapshots live, and how often its writer makes one. */
export interface SnapshotSettings {
  store: SnapshotStore;
  /** A snapshot is written once this many events were folded since the last one. */
  every: number;
  metrics: SnapshotMetrics;
}

export interface LoadedSession {
  state: SessionState;
  marks: LifecycleMarks;
  /** The subject's last sequence (0: no log). */
  lastSeq: number;
  /** `Nats-Msg-Id` of the message at `lastSeq` (`""` when it has none or there is no log). */
  lastMsgId: string;
  /** Events folded when the last snapshot was made (0: none was used). */
  snapshotEvents: number;
  from: "snapshot" | "log";
  /** Messages folded from the log: the whole log, or those after the snapshot. */
  read: number;
  /**
   * The decoded events the trace of the session's open run needs, in log order: the whole log, or
   * the events after the snapshot, preceded, when the snapshot was made with a run open (or a
   * command accepted whose run had not started), by the events from that run's acceptance on
   * (`traceFrom`, in the same read): never the session's history before it.
   */
  events: FleetEvent[];
  /** `foldTraceCursor` of the whole log. */
  traceCursor: TraceCursor;
}

export interface LoadOptions {
  js: JetStreamClient;
  jsm: JetStreamManager;
  sessionId: string;
  partition: number;
  /** K, to name the partition's event stream (default 1: `FLEET_EVENTS`). */
  groups?: number | undefined;
  snapshots?: SnapshotSettings | undefined;
  logger: Logger;
}

/**
 * The session's fold and lifecycle marks as of its last stored event. Starts from the snapshot when
 * one is stored, decodes, has this fold's format and the log still holds the message it was made
 * at; otherwise (logged, counted) from the log's first event. Equal either way: the snapshot is
 * derived data. Rejects when the log cannot be read.
 */
export async function loadSession(opts: LoadOptions): Promise<LoadedSession> {
  const subject = subjects.event(opts.partition, opts.sessionId);
  const stream = streamOf(opts);
  const settings = opts.snapshots;
  const removals: Promise<void>[] = [];
  // The snapshot's header and the log's last sequence are read at once; then the snapshot's body,
  // the check that the log holds its message, and the events after it; a refused snapshot makes
  // the tail useless and the whole log is read. The same read starts at the open run's acceptance
  // when the snapshot has a run open (its trace needs it).
  const lastRead = lastSubjectSeq(opts.jsm, stream, subject);
  lastRead.catch(() => undefined);
  const head = settings ? await snapshotHead(opts, settings, removals) : undefined;
  const lastSeqNow = await lastRead;
  let started: { snapshot: SessionSnapshot; tail: StoredRecord[] } | undefined;
  if (settings && head) {
    const after = head.header.seq + 1;
    const fromSeq = Math.min(head.header.traceFrom ?? after, after);
    const [body, held, tail] = await Promise.all([
      settings.store.readBody(head).catch((err: unknown) => ({ kind: "unavailable" as const, err })),
      heldAt(opts, head.header.seq),
      collect(readSubject(opts.js, opts.jsm, stream, subject, { fromSeq, lastSeq: lastSeqNow })),
    ]);
    const snapshot = usable(opts, settings, subject, body, held, removals);
    if (snapshot) started = { snapshot, tail };
  }
  const snapshot = started?.snapshot;
  const state = snapshot?.state ?? initialSessionState();
  const marks: LifecycleMarks = snapshot?.marks ?? {};
  let lastSeq = snapshot?.seq ?? 0;
  let lastMsgId = snapshot?.msgId ?? "";
  let read = 0;
  const events: FleetEvent[] = [];
  const records = started
    ? started.tail
    : readSubject(opts.js, opts.jsm, stream, subject, { fromSeq: 1, lastSeq: lastSeqNow });
  for await (const rec of records) {
    if (snapshot && rec.seq <= snapshot.seq) {
      // The open run's events the snapshot folds: for its trace, not folded again.
      const decoded = decodeEvent(rec.data);
      if (decoded.ok) events.push(decoded.value);
      continue;
    }
    read++;
    lastSeq = rec.seq;
    lastMsgId = rec.msgId ?? "";
    const decoded = decodeEvent(rec.data);
    if (decoded.ok) {
      events.push(decoded.value);
      evolveSession(state, decoded.value);
      markLifecycle(marks, decoded.value, rec.seq);
    } else
      opts.logger.warn({ sessionId: opts.sessionId, seq: rec.seq, error: decoded.error }, "undecodable event in log");
  }
  const from = snapshot ? "snapshot" : "log";
  if (settings) {
    settings.metrics.loads.inc({ from });
    settings.metrics.loadEvents.observe(read);
    if (!snapshot && read >= settings.every) {
      opts.logger.info(
        { evt: "session_load_full", sessionId: opts.sessionId, events: read },
        "session loaded from its whole log (no usable snapshot)",
      );
    }
  }
  // A refused snapshot is gone before this load's writer may store the next one.
  await Promise.all(removals);
  const traceCursor = marks.trace?.cursor ?? EMPTY_TRACE_CURSOR;
  return {
    state,
    marks,
    lastSeq,
    lastMsgId,
    snapshotEvents: snapshot?.state.events ?? 0,
    from,
    read,
    events,
    traceCursor,
  };
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

/** Logs, counts and removes a snapshot that is not used (the next one of the session replaces it). */
function refuse(
  opts: LoadOptions,
  settings: SnapshotSettings,
  removals: Promise<void>[],
  reason: string,
  error: string,
): undefined {
  settings.metrics.rejected.inc({ reason });
  opts.logger.warn(
    { evt: "snapshot_rejected", sessionId: opts.sessionId, reason, error },
    "session snapshot not used; folding the whole log",
  );
  // Useless as it is; and a deleted session keeps none.
  removals.push(settings.store.remove(opts.sessionId).catch(() => undefined));
  return undefined;
}

/** Not used, but kept: the bucket or the log could not be read now. */
function unavailable(opts: LoadOptions, settings: SnapshotSettings, err: unknown): undefined {
  settings.metrics.rejected.inc({ reason: "unavailable" });
  opts.logger.warn(
    { evt: "snapshot_rejected", sessionId: opts.sessionId, reason: "unavailable", err },
    "snapshot unreadable now; folding the whole log",
  );
  return undefined;
}

/** The stored snapshot's header if there is a readable one of this fold's format. */
async function snapshotHead(opts: LoadOptions, settings: SnapshotSettings, removals: Promise<void>[]) {
  let head: Awaited<ReturnType<SnapshotStore["readHead"]>>;
  try {
    head = await settings.store.readHead(opts.sessionId);
  } catch (err) {
    return unavailable(opts, settings, err);
  }
  if (head.kind === "none") return undefined;
  if (head.kind === "rejected") return refuse(opts, settings, removals, head.reason, head.error);
  return head;
}

const streamOf = (opts: LoadOptions) => eventStreamOfPartition(opts.partition, opts.groups ?? 1);

/** The log's message at `seq`: `null` when there is none, an error when the log cannot be read. */
async function heldAt(opts: LoadOptions, seq: number): Promise<StoredMsg | null | { err: unknown }> {
  try {
    return await opts.jsm.streams.getMessage(streamOf(opts), { seq });
  } catch (err) {
    return /no message found|not found/i.test((err as Error).message) ? null : { err };
  }
}

/**
 * The decoded snapshot if the log still holds the message it was made at. Sequences are never
 * reused by a stream: the same message at `seq` means the same history up to it.
 */
function usable(
  opts: LoadOptions,
  settings: SnapshotSettings,
  subject: string,
  body: SnapshotRead | { kind: "unavailable"; err: unknown },
  held: StoredMsg | null | { err: unknown },
  removals: Promise<void>[],
): SessionSnapshot | undefined {
  if (body.kind === "unavailable") return unavailable(opts, settings, body.err);
  if (held && "err" in held) return unavailable(opts, settings, held.err);
  if (body.kind === "none") return undefined;
  if (body.kind === "rejected") return refuse(opts, settings, removals, body.reason, body.error);
  const snapshot = body.snapshot;
  const heldMsgId = held?.header?.get("Nats-Msg-Id") ?? "";
  if (!held || held.subject !== subject || heldMsgId !== snapshot.msgId) {
    const error = `the log holds no message ${snapshot.msgId || "(no id)"} at seq ${snapshot.seq}`;
    return refuse(opts, settings, removals, "not_in_log", error);
  }
  return snapshot;
}
