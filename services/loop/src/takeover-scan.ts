import { decodeEvent, type FleetEvent, STREAMS, subjects } from "@fleet/protocol";
import { sleep } from "@fleet/runtime";
import type { JetStreamManager } from "@nats-io/jetstream";

/**
 * True when a session whose log ends with `last` may hold work that its owner must finish after a
 * takeover (an open run or compaction, an accepted run-starting command whose run never began,
 * pending writes). Cheap, from the last event alone, and never false for such a session: every
 * event appended while a run or compaction is open carries `meta.runId`; the events a new owner or
 * an acceptance appends before the run's first event (`owner_change`, `command_accepted` and the
 * acceptance's own events, marked `meta.commandId`) are loaded and folded to find out. Only a
 * closed run (`agent_end`), a rejection, or an event appended while nothing was open lets the
 * session be skipped.
 */
export function mayNeedRecovery(last: FleetEvent): boolean {
  if (last.type === "agent_end" || last.type === "command_rejected") return false;
  if (last.meta.runId !== undefined || last.meta.commandId !== undefined) return true;
  return last.type === "owner_change" || last.type === "command_accepted";
}

/**
 * The takeover scan of one partition: for every session subject of the partition, reads its last
 * event and hands the sessions that `mayNeedRecovery` to `recover` (which loads them; loading
 * finishes their work), one at a time, while `active()` holds. A session whose last event could not
 * be read or whose recovery failed (a timeout while a cluster elects its leaders) is tried again
 * after `retryMs`, doubling up to 8 times that, until it succeeds or the partition is let go:
 * otherwise its interrupted run waits for the session's next command (seen: 82 s).
 */
export async function scanPartition(opts: {
  jsm: JetStreamManager;
  partition: number;
  active: () => boolean;
  recover: (sessionId: string) => Promise<unknown>;
  onError: (err: unknown, subject: string) => void;
  retryMs?: number;
}): Promise<void> {
  const info = await opts.jsm.streams.info(STREAMS.events.name, {
    subjects_filter: subjects.eventsOfPartition(opts.partition),
  });
  let pending = Object.keys((info.state.subjects ?? {}) as Record<string, number>);
  const retryMs = opts.retryMs ?? 1_000;
  for (let attempt = 0; pending.length > 0; attempt++) {
    if (attempt > 0) await sleep(retryMs * 2 ** Math.min(attempt - 1, 3));
    const failed: string[] = [];
    for (const subject of pending) {
      if (!opts.active()) return;
      try {
        const last = await opts.jsm.streams.getMessage(STREAMS.events.name, { last_by_subj: subject });
        if (!last) continue;
        const event = decodeEvent(last.data);
        if (!event.ok || !mayNeedRecovery(event.value)) continue;
        await opts.recover(event.value.meta.sessionId);
      } catch (err) {
        opts.onError(err, subject);
        failed.push(subject);
      }
    }
    pending = failed;
  }
}
