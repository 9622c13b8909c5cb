import { decodeEvent, eventStreamOfPartition, type FleetEvent, subjects } from "@fleet/protocol";
import { sleep } from "@fleet/runtime";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { OpenWorkIndex } from "./open-work/open-work-index.js";

/**
 * True when a session whose log ends with `last` may hold work that its owner must finish after a
 * takeover (an open run or compaction, an accepted run-starting command whose run never began,
 * pending writes). Cheap, from the last event alone, and never false for such a session: every
 * event appended while a run or compaction is open carries `meta.runId`; the events a new owner or
 * an acceptance appends before the run's first event (`owner_change`, `command_accepted` and the
 * acceptance's own events, marked `meta.commandId`) are loaded and folded to find out. Only a
 * closed run (`agent_end`), a rejection, or an event appended while nothing was open lets the
 * session be skipped. Used only by the one full scan of a partition whose log predates its index.
 */
export function mayNeedRecovery(last: FleetEvent): boolean {
  if (last.type === "agent_end" || last.type === "command_rejected") return false;
  if (last.meta.runId !== undefined || last.meta.commandId !== undefined) return true;
  return last.type === "owner_change" || last.type === "command_accepted";
}

export interface ScanOutcome {
  /** Sessions the index listed. */
  listed: number;
  /** Whether the partition's whole log was scanned (once: its log predates the index). */
  fullScan: boolean;
  /** Sessions handed to `recover`. */
  recovered: number;
}

/**
 * The takeover scan of one partition: hands every session its open-work index lists to `recover`
 * (which loads it; loading finishes its work, and an entry with nothing open is removed), one at a
 * time, while `active()` holds. Its cost is in proportion to the partition's open work: no session
 * without an entry is read. Only while no holder has yet scanned the partition's whole log (its log
 * predates the index) are the sessions whose last event `mayNeedRecovery` added, once; the partition
 * is then noted as scanned. A session whose recovery failed (a timeout while a cluster elects its
 * leaders) is tried again after `retryMs`, doubling up to 8 times that, until it succeeds or the
 * partition is let go: otherwise its interrupted run waits for the session's next command (seen: 82 s).
 */
export async function scanPartition(opts: {
  jsm: JetStreamManager;
  index: OpenWorkIndex;
  partition: number;
  /** K, to name the partition's event stream (default 1). */
  groups?: number;
  active: () => boolean;
  recover: (sessionId: string) => Promise<unknown>;
  /** A failed read or recovery (`what`: the session, or `partition <p>` for its index), tried again. */
  onError: (err: unknown, what: string) => void;
  retryMs?: number;
}): Promise<ScanOutcome> {
  const retryMs = opts.retryMs ?? 1_000;
  const outcome: ScanOutcome = { listed: 0, fullScan: false, recovered: 0 };
  let pending: string[] | undefined;
  // Reading the index (and the log, once) is retried like a recovery.
  for (let attempt = 0; pending === undefined; attempt++) {
    if (attempt > 0) await sleep(retryMs * 2 ** Math.min(attempt - 1, 3));
    if (!opts.active()) return outcome;
    try {
      const listed = await opts.index.list(opts.partition);
      outcome.listed = listed.length;
      outcome.fullScan = !(await opts.index.scanned(opts.partition));
      const sessions = new Set(listed);
      if (outcome.fullScan)
        for (const sid of await sessionsFromLog(opts.jsm, opts.partition, opts.groups ?? 1)) sessions.add(sid);
      pending = [...sessions];
    } catch (err) {
      opts.onError(err, `partition ${opts.partition}`);
    }
  }
  for (let attempt = 0; pending.length > 0; attempt++) {
    if (attempt > 0) await sleep(retryMs * 2 ** Math.min(attempt - 1, 3));
    const failed: string[] = [];
    for (const sessionId of pending) {
      if (!opts.active()) return outcome;
      try {
        await opts.recover(sessionId);
        outcome.recovered++;
      } catch (err) {
        opts.onError(err, sessionId);
        failed.push(sessionId);
      }
    }
    pending = failed;
  }
  if (outcome.fullScan && opts.active()) await opts.index.noteScanned(opts.partition);
  return outcome;
}

/**
 * The sessions of a partition whose last event `mayNeedRecovery`, from the log itself: every subject
 * of the partition is listed and each session's last event read (cost in proportion to every
 * session ever seen; run once per partition, for logs that predate the index).
 */
async function sessionsFromLog(jsm: JetStreamManager, partition: number, groups: number): Promise<string[]> {
  const stream = eventStreamOfPartition(partition, groups);
  const info = await jsm.streams.info(stream, {
    subjects_filter: subjects.eventsOfPartition(partition),
  });
  const out: string[] = [];
  for (const subject of Object.keys((info.state.subjects ?? {}) as Record<string, number>)) {
    const last = await jsm.streams.getMessage(stream, { last_by_subj: subject });
    if (!last) continue;
    const event = decodeEvent(last.data);
    if (event.ok && mayNeedRecovery(event.value)) out.push(event.value.meta.sessionId);
  }
  return out;
}
