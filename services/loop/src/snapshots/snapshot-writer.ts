// One session's snapshot writer, on its owning worker: after every `every` events folded it stores
// the fold (PROTOCOL change 42), in the background, one write at a time.
import { copySessionState, type SessionState } from "@fleet/protocol";
import type { Logger } from "@fleet/runtime";
import type { LifecycleMarks } from "../lifecycle/lifecycle-marks.js";
import type { SnapshotSettings } from "./session-load.js";
import { encodeSnapshot } from "./snapshot-envelope.js";

/** Events between two snapshots of a session, by default (`FLEET_SNAPSHOT_EVERY`). */
export const DEFAULT_SNAPSHOT_EVERY = 1_000;

export interface SnapshotWriter {
  /**
   * The fold now holds every event through `seq` (message `msgId`): writes a snapshot when `every`
   * events were folded since the last one, no write is in flight, and no deletion is accepted.
   * Cheap when none is due; when one is, copies the state now and serialises it after this call.
   */
  folded(state: SessionState, marks: LifecycleMarks, seq: number, msgId: string): void;
  /**
   * Before the session is let go while idle: stores the fold at `seq` unless it is already stored
   * there or the session is short (fewer than `every` events), so its next load reads no events.
   */
  flush(state: SessionState, marks: LifecycleMarks, seq: number, msgId: string): Promise<void>;
  /** Resolves once no write is in flight. */
  idle(): Promise<void>;
  /** No snapshot is written any more (the session is being deleted, or the actor is let go). */
  stop(): void;
}

export function createSnapshotWriter(opts: {
  sessionId: string;
  settings: SnapshotSettings;
  /** Events folded at the snapshot the session was loaded from (0: none). */
  snapshotEvents: number;
  logger: Logger;
}): SnapshotWriter {
  const { sessionId, settings, logger } = opts;
  let lastEvents = opts.snapshotEvents;
  let inFlight: Promise<void> | undefined;
  let stopped = false;
  const write = async (state: SessionState, marks: LifecycleMarks, seq: number, msgId: string) => {
    // Off the append path: the caller's event is durable and folded; this runs after it returns.
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (stopped) return;
    const started = performance.now();
    const encoded = await encodeSnapshot({ sessionId, seq, msgId, state, marks }, settings.store.partBytes);
    await settings.store.write(encoded);
    settings.metrics.written.inc({ outcome: "ok" });
    settings.metrics.bytes.observe(encoded.header.bytes);
    logger.debug(
      {
        evt: "snapshot_written",
        sessionId,
        seq,
        events: state.events,
        bytes: encoded.header.bytes,
        ms: Math.round(performance.now() - started),
      },
      "session snapshot written",
    );
  };
  /** The latest position folded while a write was in flight: checked again once it is done. */
  let latest: { state: SessionState; marks: LifecycleMarks; seq: number; msgId: string; events: number } | undefined;
  const folded = (state: SessionState, marks: LifecycleMarks, seq: number, msgId: string) => {
    if (stopped || state.deleting || state.events - lastEvents < settings.every) return;
    if (inFlight) {
      latest = { state, marks, seq, msgId, events: state.events };
      return;
    }
    start(state, marks, seq, msgId);
  };
  /** Writes the fold at `seq` (copied now), in the background. */
  const start = (state: SessionState, marks: LifecycleMarks, seq: number, msgId: string) => {
    // A failed write is tried again after `every` more events, not at each one.
    lastEvents = state.events;
    inFlight = write(copySessionState(state), structuredClone(marks), seq, msgId)
      .catch((err) => {
        settings.metrics.written.inc({ outcome: "failed" });
        logger.warn({ evt: "snapshot_failed", sessionId, seq, err }, "session snapshot not written");
      })
      .finally(() => {
        inFlight = undefined;
        const next = latest;
        latest = undefined;
        // Events folded during the write: the snapshot keeps up with a burst that then stops. The
        // state is live: it is used only while it still holds exactly the events through `seq`.
        if (next && next.state.events === next.events) {
          folded(next.state, next.marks, next.seq, next.msgId);
        }
      });
  };
  return {
    folded,
    async flush(state, marks, seq, msgId) {
      await inFlight;
      if (stopped || state.deleting || state.events < settings.every || state.events === lastEvents) return;
      start(state, marks, seq, msgId);
      await inFlight;
    },
    idle: () => inFlight ?? Promise.resolve(),
    stop() {
      stopped = true;
    },
  };
}
