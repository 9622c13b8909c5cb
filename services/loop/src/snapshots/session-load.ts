// Loading a session's fold: its latest snapshot and the events after it, or the whole log when
// there is no usable snapshot (PROTOCOL change 42).
import { decodeEvent, evolveSession, initialSessionState, type SessionState, STREAMS, subjects } from "@fleet/protocol";
import { type Logger, readSubject } from "@fleet/runtime";
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { type LifecycleMarks, markLifecycle } from "../lifecycle/lifecycle-marks.js";
import type { SessionSnapshot } from "./snapshot-envelope.js";
import type { SnapshotMetrics } from "./snapshot-metrics.js";
import type { SnapshotStore } from "./snapshot-store.js";

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
  /** Messages read from the log. */
  read: number;
}

export interface LoadOptions {
  js: JetStreamClient;
  jsm: JetStreamManager;
  sessionId: string;
  partition: number;
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
  const log = opts.logger;
  const snapshot = opts.snapshots ? await usableSnapshot(opts, opts.snapshots, subject) : undefined;
  const state = snapshot?.state ?? initialSessionState();
  const marks: LifecycleMarks = snapshot?.marks ?? {};
  let lastSeq = snapshot?.seq ?? 0;
  let lastMsgId = snapshot?.msgId ?? "";
  let read = 0;
  const fromSeq = snapshot ? snapshot.seq + 1 : 1;
  for await (const rec of readSubject(opts.js, opts.jsm, STREAMS.events.name, subject, { fromSeq })) {
    read++;
    lastSeq = rec.seq;
    lastMsgId = rec.msgId ?? "";
    const decoded = decodeEvent(rec.data);
    if (decoded.ok) {
      evolveSession(state, decoded.value);
      markLifecycle(marks, decoded.value, rec.seq);
    } else log.warn({ sessionId: opts.sessionId, seq: rec.seq, error: decoded.error }, "undecodable event in log");
  }
  const from = snapshot ? "snapshot" : "log";
  if (opts.snapshots) {
    opts.snapshots.metrics.loads.inc({ from });
    opts.snapshots.metrics.loadEvents.observe(read);
    if (!snapshot && read >= opts.snapshots.every) {
      log.info(
        { evt: "session_load_full", sessionId: opts.sessionId, events: read },
        "session loaded from its whole log (no usable snapshot)",
      );
    }
  }
  return { state, marks, lastSeq, lastMsgId, snapshotEvents: snapshot?.state.events ?? 0, from, read };
}

/** The stored snapshot if it can be used; a rejected one is logged, counted and removed. */
async function usableSnapshot(
  opts: LoadOptions,
  settings: SnapshotSettings,
  subject: string,
): Promise<SessionSnapshot | undefined> {
  const { sessionId, logger } = opts;
  const reject = (reason: string, error: string) => {
    settings.metrics.rejected.inc({ reason });
    logger.warn(
      { evt: "snapshot_rejected", sessionId, reason, error },
      "session snapshot not used; folding the whole log",
    );
    // Useless as it is: the next snapshot of this session replaces it, and a deleted session keeps none.
    void settings.store.remove(sessionId).catch(() => undefined);
    return undefined;
  };
  let stored: Awaited<ReturnType<SnapshotStore["read"]>>;
  try {
    stored = await settings.store.read(sessionId);
  } catch (err) {
    settings.metrics.rejected.inc({ reason: "unavailable" });
    logger.warn(
      { evt: "snapshot_rejected", sessionId, reason: "unavailable", err },
      "snapshot unreadable; folding the whole log",
    );
    return undefined;
  }
  if (stored.kind === "none") return undefined;
  if (stored.kind === "rejected") return reject(stored.reason, stored.error);
  const snapshot = stored.snapshot;
  // Sequences are never reused by a stream: the same message at `seq` means the same history up to it.
  let held: Awaited<ReturnType<JetStreamManager["streams"]["getMessage"]>>;
  try {
    held = await opts.jsm.streams.getMessage(STREAMS.events.name, { seq: snapshot.seq });
  } catch (err) {
    if (!/no message found|not found/i.test((err as Error).message)) {
      settings.metrics.rejected.inc({ reason: "unavailable" });
      logger.warn(
        { evt: "snapshot_rejected", sessionId, reason: "unavailable", err },
        "snapshot not checkable; folding the whole log",
      );
      return undefined;
    }
    held = null;
  }
  const heldMsgId = held?.header?.get("Nats-Msg-Id") ?? "";
  if (!held || held.subject !== subject || heldMsgId !== snapshot.msgId) {
    return reject("not_in_log", `the log holds no message ${snapshot.msgId || "(no id)"} at seq ${snapshot.seq}`);
  }
  return snapshot;
}
