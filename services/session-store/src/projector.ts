import {
  type FleetEvent,
  type PartitionedSubject,
  parseEventSubject,
  parseLifecycleSubject,
  partitionOf,
} from "@fleet/protocol";
import { decodeForProjection } from "./event-decoder.js";
import type { SessionCache } from "./session-cache.js";
import { planWrite, type WritePlan } from "./session-codec.js";
import type { SessionRepo } from "./session-repo.js";
import { emptyProjectedSession, type ProjectedSession, projectEvents, type StreamEvent } from "./session-state.js";
import { createShardWriter } from "./shard-writer.js";
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
   * Applies a batch of events (stream order) to namespace `ns`: `applyPrepared(ns, await
   * prepareBatch(records))`. Resolves when every session is written; rejects (and nothing must be
   * acked) when a write keeps failing.
   */
  applyBatch(ns: string, records: readonly EventRecord[]): Promise<void>;
  /**
   * Decodes a batch and groups it by session, touching neither Redis nor any session state, so it
   * may run while the batch before it is still being applied.
   */
  prepareBatch(records: readonly EventRecord[]): Promise<PreparedBatch>;
  /**
   * Applies a prepared batch to namespace `ns`. Each session's events are applied in one atomic,
   * lastSeq-guarded write; sessions are applied concurrently, their writes sent per shard. Batches
   * must be applied one after the other, in stream order.
   */
  applyPrepared(ns: string, batch: PreparedBatch): Promise<void>;
  readonly stats: ProjectorStats;
}

/** A batch decoded and grouped by session (`Projector.prepareBatch`). */
export interface PreparedBatch {
  readonly sessions: ReadonlyMap<string, { subject: string; events: Decoded[] }>;
  /** The highest stream sequence of each partition in the batch. */
  readonly maxSeqByPartition: ReadonlyMap<number, number>;
}

const MAX_ATTEMPTS = 8;
const FOLD_SLICE = 500;

/** One event of a batch, decoded (`event: null` when it could not be). */
export interface Decoded {
  seq: number;
  prevSeq: number | undefined;
  event: FleetEvent | null;
}

/** One session's events of a batch. */
interface SessionWork {
  sessionId: string;
  subject: string;
  events: Decoded[];
}

/** A session folded: its state (null: nothing stored) and the write that stores it, if any. */
interface Planned {
  state: ProjectedSession | null;
  plan?: WritePlan;
}

/** Session writes of one shard sent in one script call. */
const SHARD_CHUNK = 128;

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
   * The events of a session's batch left after its last `session_deleting` (the session is being
   * deleted or archived), whose projection is removed first: what came before it in the batch is
   * dropped, what comes after it (a new session of the same id) is folded afresh. Null: nothing left.
   */
  async function afterTombstone(ns: string, sessionId: string, events: Decoded[]): Promise<Decoded[] | null> {
    const tombstone = events.findLastIndex((e) => e.event?.type === "session_deleting");
    if (tombstone < 0) return events;
    await removeSession(ns, sessionId);
    return tombstone + 1 < events.length ? events.slice(tombstone + 1) : null;
  }

  /**
   * Folds a session's events onto its current state and plans the write; `state` alone when there is
   * nothing to write (a redelivery: its index entry is still raised, as it may be what was missing).
   */
  async function planSession(ns: string, work: SessionWork): Promise<Planned> {
    const { sessionId, subject, events } = work;
    const state = await loadState(ns, sessionId);
    const last = events.at(-1) as Decoded;
    if (last.seq <= state.lastSeq) return { state: state.lastSeq > 0 ? state : null };
    let base = state;
    let fresh = await withGapsFilled(subject, sessionId, state.lastSeq, events);
    // A gap read from the stream may hold a `session_deleting` (the stream still holds the deleted
    // history, e.g. before its purge): the session starts afresh after it, as in a batch.
    const gapTombstone = fresh.findLastIndex((e) => e.event?.type === "session_deleting");
    if (gapTombstone >= 0) {
      await removeSession(ns, sessionId);
      fresh = fresh.slice(gapTombstone + 1);
      base = emptyProjectedSession(sessionId);
      if (fresh.length === 0) return { state: null };
    }
    const next = projectEvents(base, fresh);
    return { state: next, plan: planWrite(base, next) };
  }

  /**
   * Plans every session and hands its write to `writer` (writes go out per shard while the rest is
   * still folded); resolves with the sessions whose write met a newer stored state (another writer
   * moved them: lease overlap, namespace change), to be reloaded and folded again.
   */
  async function applyRound(ns: string, todo: readonly SessionWork[]): Promise<SessionWork[]> {
    const writer = createShardWriter(deps.repo, ns, SHARD_CHUNK);
    const stale: SessionWork[] = [];
    const stages: Array<Promise<{ written: Promise<void> }>> = [];
    let folded = 0;
    for (const work of todo) {
      const stage = planSession(ns, work).then((planned) => {
        if (!planned.plan) {
          if (planned.state) writer.touch(planned.state);
          return { written: Promise.resolve() };
        }
        const next = planned.state as ProjectedSession;
        const written = writer
          .write({ sessionId: work.sessionId, updatedAt: next.updatedAt, plan: planned.plan })
          .then((result) => {
            if (result.applied) {
              deps.cache.put(ns, next);
              stats.applied += work.events.length;
            } else {
              stats.staleRetries++;
              deps.cache.delete(ns, work.sessionId);
              stale.push(work);
            }
          });
        // Awaited below; handled here so a rejection meanwhile is not unhandled.
        written.catch(() => undefined);
        return { written };
      });
      stage.catch(() => undefined);
      stages.push(stage);
      // Sessions are folded in slices of about FOLD_SLICE events with a yield in between: a fold runs
      // synchronously once its state is loaded, so without the yields one batch would hold the event
      // loop (lease renewals, queries) for all of its sessions at once.
      folded += work.events.length;
      if (folded >= FOLD_SLICE) {
        folded = 0;
        await yieldToIo();
      }
    }
    const planned = await Promise.all(stages);
    await writer.flush();
    await Promise.all(planned.map((p) => p.written));
    return stale;
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

  async function prepareBatch(records: readonly EventRecord[]): Promise<PreparedBatch> {
    const sessions = new Map<string, { subject: string; events: Decoded[] }>();
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
      let group = sessions.get(parsed.sessionId);
      if (!group) {
        group = { subject: record.subject, events: [] };
        sessions.set(parsed.sessionId, group);
      }
      group.events.push(decode(record, parsed.sessionId));
    }
    return { sessions, maxSeqByPartition };
  }

  async function applyPrepared(ns: string, batch: PreparedBatch): Promise<void> {
    const todo: SessionWork[] = [];
    for (const [sessionId, g] of batch.sessions) {
      const events = await afterTombstone(ns, sessionId, g.events);
      if (events) todo.push({ sessionId, subject: g.subject, events });
    }
    let stale = todo;
    for (let attempt = 0; stale.length > 0; attempt++) {
      if (attempt === MAX_ATTEMPTS) {
        throw new Error(
          `session ${(stale[0] as SessionWork).sessionId}: write kept conflicting after ${MAX_ATTEMPTS} attempts`,
        );
      }
      stale = await applyRound(ns, stale);
    }
    await Promise.all([...batch.maxSeqByPartition].map(([p, seq]) => deps.repo.markApplied(ns, p, seq)));
  }

  return {
    stats,
    prepareBatch,
    applyPrepared,
    async applyBatch(ns, records) {
      await applyPrepared(ns, await prepareBatch(records));
    },
  };
}
