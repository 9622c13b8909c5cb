// The options and answers of FleetClient's log readers (events, replay).
import type { FleetEvent, SessionSpend } from "@fleet/protocol";
import type { SessionView } from "./session-view.js";

/** One event of a session and its stream sequence in FLEET_EVENTS. */
export interface SessionEventItem {
  seq: number;
  event: FleetEvent;
}

/** A `SessionEventItem` with the stored bytes (the event's JSON) it was decoded from. */
export interface SessionEventRecord extends SessionEventItem {
  data: Uint8Array;
}

export interface EventsOptions {
  /**
   * Where to start: a stream sequence (inclusive), `"start"` (the first event; the default) or
   * `"new"` (only events appended after this call).
   */
  from?: number | "start" | "new";
  /** Ends the iteration. */
  signal?: AbortSignal;
  /** Called for a stored message that is not a valid event (it is skipped). */
  onInvalid?: (seq: number, error: string) => void;
  /** Called when the underlying consumer is recreated (reconnect, server restart). */
  onResume?: (nextSeq: number) => void;
}

/** `replay()`'s answer: the session as it stood at `view.seq`. */
export interface ReplayResult extends SessionView {
  /** Events applied. */
  events: number;
  /** Stored messages that did not decode as events (skipped). */
  invalid: { seq: number; error: string }[];
  /** Tokens and cost spent per run, session and UTC day, and the budget in force (the loop's fold). */
  spend: SessionSpend;
}
