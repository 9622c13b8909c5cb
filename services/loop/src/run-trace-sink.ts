// Live span export from the loop worker: the events it appends (and the open run of a session it
// loads) become spans with the protocol's `deriveRunSpans`, each sent once it is closed.
import {
  deriveRunSpans,
  EMPTY_TRACE_CURSOR,
  type FleetEvent,
  foldTraceCursor,
  type TraceCursor,
  type TraceSpan,
} from "@fleet/protocol";

/**
 * What a session actor tells the span exporter. Contract: never throws; the actor calls `loaded`
 * once with the log it loaded, then `appended` with each event once it is durable, in log order.
 */
export interface RunTraceSink {
  loaded(sessionId: string, events: readonly FleetEvent[]): void;
  appended(event: FleetEvent): void;
}

/** Event types whose append may close a span (only they trigger a derivation). */
const CLOSING: ReadonlySet<FleetEvent["type"]> = new Set([
  "message_end",
  "tool_execution_end",
  "tool_approval_resolved",
  "compaction_end",
  "run_resumed",
  "queue_update",
  "agent_end",
]);

interface OpenRun {
  runId: string;
  events: FleetEvent[];
  exported: Set<string>;
  /** A `message_update` of the current assistant message is kept (time to first token); later ones are not. */
  sawUpdate: boolean;
}

interface SessionTraces {
  cursor: TraceCursor;
  /** The latest `command_accepted`: the one before a run's `agent_start` holds its trace context. */
  lastAccepted: FleetEvent | undefined;
  run: OpenRun | undefined;
}

/**
 * Keeps the events of each session's open run (without the `message_update`s after a message's
 * first) and sends the spans each append closes through `send`. A run taken over from a crashed
 * worker starts from the log the new owner loaded: the spans closed in it were sent by the owner
 * that closed them; what the crash cut is sent by the new owner (`fleet trace export` sends a whole
 * run again). A run's state is dropped at its `agent_end`.
 */
export function createRunTraceSink(send: (spans: TraceSpan[]) => void): RunTraceSink {
  const sessions = new Map<string, SessionTraces>();

  const flush = (run: OpenRun) => {
    const closed = deriveRunSpans(run.events, { runId: run.runId }).filter(
      (s) => !s.open && !run.exported.has(s.spanId),
    );
    for (const s of closed) run.exported.add(s.spanId);
    if (closed.length > 0) send(closed);
  };

  const observe = (traces: SessionTraces, event: FleetEvent, live: boolean) => {
    const before = traces.cursor;
    traces.cursor = foldTraceCursor(before, event);
    if (event.type === "command_accepted") traces.lastAccepted = event;
    const opened = traces.cursor.run && traces.cursor.run.root !== before.run?.root ? traces.cursor.run : undefined;
    if (opened) {
      const start = traces.lastAccepted ? [traces.lastAccepted] : [];
      traces.run = { runId: opened.root.runId, events: [...start, event], exported: new Set(), sawUpdate: false };
      return;
    }
    const run = traces.run;
    if (!run) return;
    const ofRun =
      event.meta.runId === run.runId || (event.type === "compaction_end" && before.run?.root.runId === run.runId);
    if (!ofRun && event.type !== "queue_update") return;
    if (event.type === "message_start") run.sawUpdate = false;
    if (event.type === "message_update") {
      if (run.sawUpdate) return;
      run.sawUpdate = true;
    }
    run.events.push(event);
    if (live && CLOSING.has(event.type)) flush(run);
    if (!traces.cursor.run) traces.run = undefined;
  };

  const sink: RunTraceSink = {
    loaded(sessionId, events) {
      const traces: SessionTraces = { cursor: EMPTY_TRACE_CURSOR, lastAccepted: undefined, run: undefined };
      for (const event of events) observe(traces, event, false);
      // What was closed before this load was the previous owner's to send.
      if (traces.run) {
        for (const s of deriveRunSpans(traces.run.events, { runId: traces.run.runId })) {
          if (!s.open) traces.run.exported.add(s.spanId);
        }
      }
      // Kept only while it matters: a run is open, or the log ends with the acceptance of a command
      // whose run has not started yet (its trace context is in that acceptance).
      const last = events.findLast((e) => e.type !== "owner_change");
      if (traces.run || last?.type === "command_accepted") sessions.set(sessionId, traces);
      else sessions.delete(sessionId);
    },
    appended(event) {
      let traces = sessions.get(event.meta.sessionId);
      if (!traces) {
        traces = { cursor: EMPTY_TRACE_CURSOR, lastAccepted: undefined, run: undefined };
        sessions.set(event.meta.sessionId, traces);
      }
      const hadRun = traces.run !== undefined;
      observe(traces, event, true);
      // Between runs only the next command's acceptance matters, and it is appended live.
      if ((hadRun && !traces.run) || event.type === "session_deleting") sessions.delete(event.meta.sessionId);
    },
  }; // The actor calls this on its append path: a fault here costs the session's spans, never its run.
  return {
    loaded(sessionId, events) {
      try {
        sink.loaded(sessionId, events);
      } catch {
        sessions.delete(sessionId);
      }
    },
    appended(event) {
      try {
        sink.appended(event);
      } catch {
        sessions.delete(event.meta.sessionId);
      }
    },
  };
}
