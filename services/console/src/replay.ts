// A session's log folded with the protocol's reducers, with a checkpoint every CHECKPOINT_EVERY
// events, so the state at any event costs one clone and fewer than CHECKPOINT_EVERY folds.
// Checkpoints are taken without applying the buffered `message_update` deltas (that is most of the
// cost of a fold): `settleCheckpoints` applies them in idle time after the open, and a checkpoint
// not settled yet applies them once, in place, the first time a state is cloned from it.
import {
  copySessionState,
  evolveSession,
  initialSessionState,
  type SessionState,
  streamingMessageOf,
} from "@fleet/protocol";
import type { LoggedEvent } from "./sse.js";

export const CHECKPOINT_EVERY = 250;

/** The folded state after `index` events; `progress` is the last partial result per running tool call. */
export interface Folded {
  session: SessionState;
  progress: Map<string, unknown>;
  index: number;
  seq: number;
  /** `meta.ts` of the last event folded. */
  ts: number | null;
}

function initialFolded(): Folded {
  return { session: initialSessionState(), progress: new Map(), index: 0, seq: 0, ts: null };
}

/** Folds one event in place. */
export function foldInto(state: Folded, item: LoggedEvent): void {
  const { event } = item;
  evolveSession(state.session, event);
  if (event.type === "tool_execution_update") state.progress.set(event.toolCallId, event.partialResult);
  else if (event.type === "tool_execution_end") state.progress.delete(event.toolCallId);
  state.index++;
  state.seq = item.seq;
  state.ts = event.meta.ts;
}

export class ReplayLog {
  readonly events: LoggedEvent[] = [];
  private readonly checkpoints: Folded[] = [initialFolded()];
  /** Checkpoints before this one have their deltas applied. */
  private settled = 0;
  private readonly live: Folded = initialFolded();

  append(items: readonly LoggedEvent[]): void {
    for (const item of items) {
      if (item.seq <= this.live.seq) continue;
      this.events.push(item);
      foldInto(this.live, item);
      if (this.events.length % CHECKPOINT_EVERY === 0) this.checkpoints.push(snapshot(this.live));
    }
  }

  /**
   * Applies the buffered deltas of checkpoints until `deadline` (a `performance.now()` time) passes;
   * true while some are left. Only makes later `at` calls cheaper: states are the same either way.
   */
  settleCheckpoints(deadline: number): boolean {
    while (this.settled < this.checkpoints.length && performance.now() < deadline) {
      streamingMessageOf((this.checkpoints[this.settled] as Folded).session);
      this.settled++;
    }
    return this.settled < this.checkpoints.length;
  }

  get length(): number {
    return this.events.length;
  }

  /** The state after every event (shared: read only). */
  latest(): Folded {
    return this.live;
  }

  /**
   * A state of its own after `n` events. `from` (a state this returned before, now given up) is
   * folded forward when it is at most one checkpoint behind; else the nearest checkpoint is cloned.
   */
  at(n: number, from?: Folded): Folded {
    const target = Math.max(0, Math.min(n, this.events.length));
    let state: Folded;
    if (from && from.index <= target && target - from.index < CHECKPOINT_EVERY) state = from;
    else {
      const checkpoint = (this.checkpoints[Math.floor(target / CHECKPOINT_EVERY)] ?? this.checkpoints[0]) as Folded;
      // Settled before the copy, so that the copy does not settle the same deltas again.
      streamingMessageOf(checkpoint.session);
      state = snapshot(checkpoint);
    }
    while (state.index < target) foldInto(state, this.events[state.index] as LoggedEvent);
    return state;
  }
}

/** A copy that folding either side never changes (`copySessionState`); far cheaper than `structuredClone`. */
export function snapshot(state: Folded): Folded {
  return { ...state, session: copySessionState(state.session), progress: new Map(state.progress) };
}
