// Where a session's log must be read from for the trace of its open run (PROTOCOL change 42): a
// load that starts from a snapshot reads the log from there, not from the session's first event.
import { EMPTY_TRACE_CURSOR, type FleetEvent, foldTraceCursor, type TraceCursor } from "@fleet/protocol";

export interface TraceMark {
  /** `foldTraceCursor` of the log through the last event marked. */
  cursor: TraceCursor;
  /** Sequence of the latest `command_accepted`. */
  acceptedSeq?: number;
  /**
   * While a run (or a standalone compaction) is open: the sequence of the latest `command_accepted`
   * before its start (it holds the run's trace context), else of its start.
   */
  runFrom?: number;
  /** The latest `command_accepted`, while no run has started since (its run may still start). */
  pendingFrom?: number;
}

export const emptyTraceMark = (): TraceMark => ({ cursor: plain(EMPTY_TRACE_CURSOR) });

/** Updates `mark` with one event stored at `seq`, in place. Pure but for the mutation. */
export function markTrace(mark: TraceMark, event: FleetEvent, seq: number): void {
  const before = mark.cursor.run;
  const next = foldTraceCursor(mark.cursor, event);
  if (next !== mark.cursor) mark.cursor = plain(next);
  if (event.type === "command_accepted") {
    mark.acceptedSeq = seq;
    mark.pendingFrom = seq;
  }
  const run = mark.cursor.run;
  if (!run) delete mark.runFrom;
  else if (run.root !== before?.root) {
    mark.runFrom = mark.acceptedSeq ?? seq;
    delete mark.pendingFrom;
  }
}

/**
 * The first sequence a load must hand to the trace sink beside the events after its snapshot:
 * the open run's `runFrom`, else a `command_accepted` whose run has not started; `undefined` when
 * the events after the snapshot are enough. From there, the events fold to the trace cursor and
 * open run the whole log gives.
 */
export const traceFrom = (mark: TraceMark | undefined): number | undefined => mark?.runFrom ?? mark?.pendingFrom;

/**
 * `cursor` without `undefined` fields, as a snapshot stores and reads it back (the run's root is
 * kept, not copied: a run opens when its root changes).
 */
function plain(cursor: TraceCursor): TraceCursor {
  const run = cursor.run;
  const out: Partial<TraceCursor> = {};
  if (cursor.lastCommandTrace !== undefined) out.lastCommandTrace = cursor.lastCommandTrace;
  if (run) {
    out.run = { root: run.root, lastStepId: run.lastStepId, standalone: run.standalone };
    if (run.compactionId !== undefined) out.run.compactionId = run.compactionId;
  }
  return out as TraceCursor;
}
