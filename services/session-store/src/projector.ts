import {
  type FleetEvent,
  type PartitionedSubject,
  parseEventSubject,
  parseLifecycleSubject,
  partitionOf,
} from "@fleet/protocol";
import { decodeForProjection } from "./event-decoder.js";
import type { SessionCache } from "./session-cache.js";
import { planWrite } from "./session-codec.js";
import type { SessionRepo } from "./session-repo.js";
import { emptyProjectedSession, type ProjectedSession, projectEvents, type StreamEvent } from "./session-state.js";
import { yieldToIo } from "./slots.js";

/** One stored message of FLEET_EVENTS. */
export interface EventRecord {
  seq: number;
  subject: string;
  data: Uint8Array;
  /**
   * `Nats-Expected-Last-Subject-Sequence` of the append: the stream sequence of the previous event of
   * this session. Absent when the producer did not set it (then gaps cannot be detected).
   */
  prevSeq: number | undefined;
}

/** Reads the stored events of one subject with `fromSeq <= seq <= toSeq`, in order. */
export type GapReader = (subject: string, fromSeq: number, toSeq: number) => Promise<EventRecord[]>;

export interface ProjectorStats {
  applied: number;
  /** Sessions whose projection a `session_deleting` removed. */
  removed: number;
  invalid: number;
  gapRepairs: number;
  staleRetries: number;
}

export interface ProjectorDeps {
  repo: SessionRepo;
  cache: SessionCache;
  readGap: GapReader;
  /** Partition count: a subject whose `<p>` is not `partitionOf(sessionId)` is not a session event. */
  partitions: number;
  onInvalid?: (record: EventRecord, error: string) => void;
}

export interface Projector {
  /**
   * Applies a batch of events (stream order) to namespace `ns`. Each session's events are applied in
   * one atomic, lastSeq-guarded write; sessions are applied concurrently. Resolves when every
   * session is written; rejects (and nothing must be acked) when a write keeps failing.
   */
  applyBatch(ns: string, records: readonly EventRecord[]): Promise<void>;
  readonly stats: ProjectorStats;
}

const MAX_ATTEMPTS = 8;
const FOLD_SLICE = 500;

interface Decoded {
  seq: number;
  prevSeq: number | undefined;
  event: FleetEvent | null;
}

export function createProjector(deps: ProjectorDeps): Projector {
  const stats: ProjectorStats = { applied: 0, removed: 0, invalid: 0, gapRepairs: 0, staleRetries: 0 };

  function decode(record: EventRecord, sessionId: string): Decoded {
    const decoded = decodeForProjection(record.data);
    let event: FleetEvent | null = null;
    if (!decoded.ok) deps.onInvalid?.(record, decoded.error);
    else if (decoded.event.meta.sessionId !== sessionId) {
      deps.onInvalid?.(record, `meta.sessionId ${decoded.event.meta.sessionId} is not the subject's ${sessionId}`);
    } else event = decoded.event;
    if (!event) stats.invalid++;
    return { seq: record.seq, prevSeq: record.prevSeq, event };
  }

  /**
   * The events to fold after `lastSeq`: those of the batch, preceded by any the batch skipped over.
   * A gap shows as an event whose previous subject sequence is above the last one known; it is
   * filled from the stream, so a session is always folded in its subject's order.
   */
  async function withGapsFilled(subject: string, sessionId: string, lastSeq: number, events: Decoded[]) {
    const out: StreamEvent[] = [];
    let known = lastSeq;
    for (const e of events) {
      if (e.seq <= known) continue;
      if (e.prevSeq !== undefined && e.prevSeq > known) {
        stats.gapRepairs++;
        for (const record of await deps.readGap(subject, known + 1, e.prevSeq)) {
          if (record.seq > known && record.seq < e.seq) {
            out.push(decode(record, sessionId));
            known = record.seq;
          }
        }
      }
      out.push(e);
      known = e.seq;
    }
    return out;
  }

  async function loadState(ns: string, sessionId: string): Promise<ProjectedSession> {
    const cached = deps.cache.get(ns, sessionId);
    if (cached) return cached;
    const loaded = await deps.repo.load(ns, sessionId);
    if (loaded.kind === "ok") return loaded.session;
    if (loaded.kind === "missing") return emptyProjectedSession(sessionId);
    throw new Error(loaded.kind === "corrupt" ? loaded.error : `session ${sessionId}: unexpected load result`);
  }

  async function removeSession(ns: string, sessionId: string) {
    await deps.repo.remove(ns, sessionId);
    deps.cache.delete(ns, sessionId);
    stats.removed++;
  }

  /**
   * Applies one session's events; resolves with its state for the index (null: nothing stored). A
   * `session_deleting` (the session is being deleted or archived) removes the session's projection:
   * what came before it in the batch is dropped, what comes after it (a new session of the same id)
   * is folded afresh.
   */
  async function applySession(ns: string, sessionId: string, subject: string, batch: Decoded[]) {
    let events = batch;
    const tombstone = events.findLastIndex((e) => e.event?.type === "session_deleting");
    if (tombstone >= 0) {
      await removeSession(ns, sessionId);
      events = events.slice(tombstone + 1);
      if (events.length === 0) return null;
    }
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const state = await loadState(ns, sessionId);
      const last = events.at(-1) as Decoded;
      // Everything applied already (a redelivery): still index it, as the index is written after.
      if (last.seq <= state.lastSeq) return state.lastSeq > 0 ? state : null;
      let base = state;
      let fresh = await withGapsFilled(subject, sessionId, state.lastSeq, events);
      // A gap read from the stream may hold a `session_deleting` (the stream still holds the deleted
      // history, e.g. before its purge): the session starts afresh after it, as in a batch.
      const gapTombstone = fresh.findLastIndex((e) => e.event?.type === "session_deleting");
      if (gapTombstone >= 0) {
        await removeSession(ns, sessionId);
        fresh = fresh.slice(gapTombstone + 1);
        base = emptyProjectedSession(sessionId);
        if (fresh.length === 0) return null;
      }
      const next = projectEvents(base, fresh);
      const result = await deps.repo.write(ns, sessionId, planWrite(base, next));
      if (result.applied) {
        deps.cache.put(ns, next);
        stats.applied += events.length;
        return next;
      }
      // Another writer moved the session (lease overlap, namespace change): reload and refold.
      stats.staleRetries++;
      deps.cache.delete(ns, sessionId);
    }
    throw new Error(`session ${sessionId}: write kept conflicting after ${MAX_ATTEMPTS} attempts`);
  }

  // Subject → session and partition, or null for a subject that is not a valid session event subject.
  const subjectCache = new Map<string, PartitionedSubject | null>();
  function parseSubject(subject: string): PartitionedSubject | null {
    let parsed = subjectCache.get(subject);
    if (parsed === undefined) {
      const p = parseEventSubject(subject);
      parsed = p && partitionOf(p.sessionId, deps.partitions) === p.partition ? p : null;
      if (subjectCache.size >= 100_000) subjectCache.clear();
      subjectCache.set(subject, parsed);
    }
    return parsed;
  }

  return {
    stats,
    async applyBatch(ns, records) {
      const bySession = new Map<string, { subject: string; partition: number; events: Decoded[] }>();
      const maxSeqByPartition = new Map<number, number>();
      let decoded = 0;
      for (const record of records) {
        if (++decoded % 1000 === 0) await yieldToIo();
        const parsed = parseSubject(record.subject);
        // Lifecycle records (a rebuild replays the whole stream) are the auditor's, not a session's.
        if (!parsed && parseLifecycleSubject(record.subject)) continue;
        if (!parsed) {
          stats.invalid++;
          deps.onInvalid?.(record, `not an event subject: ${record.subject}`);
          continue;
        }
        maxSeqByPartition.set(parsed.partition, Math.max(maxSeqByPartition.get(parsed.partition) ?? 0, record.seq));
        let group = bySession.get(parsed.sessionId);
        if (!group) {
          group = { subject: record.subject, partition: parsed.partition, events: [] };
          bySession.set(parsed.sessionId, group);
        }
        group.events.push(decode(record, parsed.sessionId));
      }
      // Sessions are folded in slices of about FOLD_SLICE events with a yield in between: a fold runs
      // synchronously once its state is loaded, so without the yields one batch would hold the event
      // loop (lease renewals, queries) for all of its sessions at once. The writes stay concurrent.
      const pending: Array<Promise<ProjectedSession | null>> = [];
      let folded = 0;
      for (const [sid, g] of bySession) {
        const applied = applySession(ns, sid, g.subject, g.events);
        // Handled here so a rejection during a yield is not unhandled; Promise.all below reports it.
        applied.catch(() => undefined);
        pending.push(applied);
        folded += g.events.length;
        if (folded >= FOLD_SLICE) {
          folded = 0;
          await yieldToIo();
        }
      }
      const states = await Promise.all(pending);
      const indexed = states.filter((s): s is ProjectedSession => s !== null);
      await Promise.all([
        deps.repo.touchIndex(ns, indexed),
        ...[...maxSeqByPartition].map(([p, seq]) => deps.repo.markApplied(ns, p, seq)),
      ]);
    },
  };
}
