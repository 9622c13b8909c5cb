// The single path from the engine to the `emit` port: mints ids, fills `entry` from the leaf, and
// delivers events strictly one after another.
import { ENTRY_EVENT_TYPES, type EventBody, ensureError } from "@fleet/protocol";
import type { DraftEvent } from "../session-core/drafts.js";
import { isPromise, noop, RESOLVED, type Sink } from "./run-scope.js";
import type { Emit, EngineEvent, LoopEventBody } from "./types.js";

const ENTRY_TYPES: ReadonlySet<string> = new Set(ENTRY_EVENT_TYPES);

export interface EventSinkOptions {
  emit: Emit;
  newId: () => string;
  /**
   * The session's leaf: a function reads it from the session's fold when an entry event is
   * delivered (the shell folds each delivered event before the next delivery); a value is the leaf
   * before the first event, which the sink then moves itself (the stateless loop).
   */
  leafId: string | null | (() => string | null);
  /** Called once, when `emit` first throws. */
  onFailure?: (error: Error) => void;
}

/**
 * A sink's state: an object literal, so its hidden class outlives every sink (V8 drops the hidden
 * classes of a class's instances, and the optimised code built on them, once no instance survives a
 * few major GCs). The functions below drive it; `EventSink` is their public face.
 */
export interface SinkState {
  /** `meta.runId` stamped on queued events; the shell sets it for the span of a run. */
  runId: string | undefined;
  ownLeaf: string | null;
  readonly readLeaf: (() => string | null) | undefined;
  tail: Promise<void>;
  inFlight: number;
  failed: Error | undefined;
  readonly port: Emit;
  readonly newId: () => string;
  readonly onFailure: ((error: Error) => void) | undefined;
  /** True while a synchronous port call is on the stack: an emit made from inside it is queued. */
  delivering: boolean;
}

export function createSinkState(options: EventSinkOptions): SinkState {
  const read = typeof options.leafId === "function" ? options.leafId : undefined;
  return {
    runId: undefined,
    ownLeaf: typeof options.leafId === "function" ? null : options.leafId,
    readLeaf: read,
    tail: RESOLVED,
    inFlight: 0,
    failed: undefined,
    port: options.emit,
    newId: options.newId,
    onFailure: options.onFailure,
    delivering: false,
  };
}

/**
 * Invariants:
 * - events reach `emit` in the order `emit` was called on the sink, never two at a time;
 * - every entry event gets `entry: {id, parentId: leaf}`, the leaf as it is when the event is delivered;
 * - after the port first throws, every later `emit` rejects with that same error (nothing more is sent).
 */
export class EventSink implements Sink {
  declare private readonly state: SinkState;

  constructor(options: EventSinkOptions) {
    this.state = createSinkState(options);
  }

  /** `meta.runId` stamped on queued events; the shell sets it for the span of a run. */
  get runId(): string | undefined {
    return this.state.runId;
  }

  set runId(runId: string | undefined) {
    this.state.runId = runId;
  }

  get leafId(): string | null {
    return sinkLeafId(this.state);
  }

  get failure(): Error | undefined {
    return this.state.failed;
  }

  failed(): Error | undefined {
    return this.state.failed;
  }

  /** See `sinkEmit`. */
  emit(body: LoopEventBody | (() => LoopEventBody), id?: string): Promise<void> {
    return sinkEmit(this.state, body, id);
  }

  /** See `sinkExclusive`. */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return sinkExclusive(this.state, fn);
  }

  /** See `sinkEmitDecided`. */
  emitDecided(decide: () => readonly DraftEvent[]): Promise<readonly DraftEvent[]> {
    return sinkEmitDecided(this.state, decide);
  }

  /** See `sinkEmitDecidedNow`. */
  emitDecidedNow<A>(decide: (arg: A) => readonly DraftEvent[], arg: A): Promise<void> {
    return sinkEmitDecidedNow(this.state, decide, arg);
  }
}

export function sinkLeafId(s: SinkState): string | null {
  return s.readLeaf ? s.readLeaf() : s.ownLeaf;
}

/**
 * Queues one event (with `id`, default a fresh one); resolves once the port accepted it and every
 * event queued before it. A function body is computed at delivery, from the session as it is then
 * (a `queue_update` that must not overwrite what was queued meanwhile).
 */
export function sinkEmit(
  s: SinkState,
  body: LoopEventBody | (() => LoopEventBody),
  id: string = s.newId(),
): Promise<void> {
  if (s.failed) return Promise.reject(s.failed);
  const runId = s.runId;
  if (s.inFlight === 0 && !s.delivering) {
    // Nothing queued: call the port now; a port that returns synchronously costs no promise.
    let accepted: Promise<void> | void;
    s.delivering = true;
    try {
      accepted = s.port(complete(s, body, id, runId));
    } catch (error) {
      return Promise.reject(fail(s, error));
    } finally {
      s.delivering = false;
    }
    if (!isPromise(accepted)) return RESOLVED;
    return track(s, accepted);
  }
  return track(
    s,
    s.tail.then(() => {
      if (s.failed) throw s.failed;
      return s.port(complete(s, body, id, runId));
    }),
  );
}

/**
 * Runs `fn` in the delivery order: after every event queued before it was accepted, and before any
 * event queued after it is delivered. The shell appends a command's events this way, so that they
 * are decided on the fold of every event the engine emitted before them. A failure of `fn` is its
 * caller's: the sink goes on.
 */
export function sinkExclusive<T>(s: SinkState, fn: () => Promise<T>): Promise<T> {
  if (s.failed) return Promise.reject(s.failed);
  const run = s.inFlight === 0 && !s.delivering ? fn() : s.tail.then(fn);
  s.inFlight++;
  const settled = run.finally(() => {
    s.inFlight--;
  });
  s.tail = settled.then(noop, noop);
  return settled;
}

/**
 * Decides events in the delivery order and delivers them: `decide` runs once every event queued
 * before it was accepted (so folded by the shell), and its drafts reach the port one after the
 * other, under their own ids, before any event queued after. Resolves with the drafts delivered.
 */
export function sinkEmitDecided(s: SinkState, decide: () => readonly DraftEvent[]): Promise<readonly DraftEvent[]> {
  if (s.failed) return Promise.reject(s.failed);
  const runId = s.runId;
  const deliver = async (): Promise<readonly DraftEvent[]> => {
    if (s.failed) throw s.failed;
    const drafts = decide();
    for (const draft of drafts) {
      if (s.failed) throw s.failed;
      const accepted = s.port(complete(s, draft.body as LoopEventBody, draft.id, runId));
      if (isPromise(accepted)) await accepted;
    }
    return drafts;
  };
  // Always behind the tail (a microtask when nothing is queued): an emit made meanwhile, even from
  // inside the port, queues behind these drafts.
  s.inFlight++;
  const delivery = s.tail.then(deliver);
  const settled = delivery.then(
    (drafts) => {
      s.inFlight--;
      return drafts;
    },
    (error: unknown) => {
      s.inFlight--;
      throw fail(s, error);
    },
  );
  s.tail = settled.then(noop, noop);
  return settled;
}

/** Nothing queued and no port call on the stack: an emit now reaches the port at once. */
export function sinkIdle(s: SinkState): boolean {
  return s.inFlight === 0 && !s.delivering;
}

/**
 * `sinkEmitDecided` without a promise when nothing is queued: `decide(arg)` runs now (every event
 * emitted before it was accepted, so folded) and its drafts reach the port at once; resolves as
 * `sinkEmit` does (`RESOLVED` when the port accepted them synchronously). Behind a queue it is
 * `sinkEmitDecided`. (`arg`, not a closure: a live run asks this for every delta.)
 */
export function sinkEmitDecidedNow<A>(s: SinkState, decide: (arg: A) => readonly DraftEvent[], arg: A): Promise<void> {
  if (s.failed) return Promise.reject(s.failed);
  if (!sinkIdle(s)) return sinkEmitDecided(s, () => decide(arg)).then(noop);
  const runId = s.runId;
  let drafts: readonly DraftEvent[];
  let i = 0;
  /** The first draft the port took asynchronously. */
  let accepted: Promise<void> | undefined;
  s.delivering = true;
  try {
    drafts = decide(arg);
    while (i < drafts.length) {
      const draft = drafts[i++] as DraftEvent;
      const taken = s.port(complete(s, draft.body as LoopEventBody, draft.id, runId));
      if (isPromise(taken)) {
        accepted = taken;
        break;
      }
    }
  } catch (error) {
    return Promise.reject(fail(s, error));
  } finally {
    s.delivering = false;
  }
  if (accepted === undefined) return RESOLVED;
  if (i === drafts.length) return track(s, accepted);
  // The rest go out one after the other, before anything queued after them.
  const rest = drafts.slice(i);
  return track(
    s,
    accepted.then(async () => {
      for (const draft of rest) {
        if (s.failed) throw s.failed;
        const next = s.port(complete(s, draft.body as LoopEventBody, draft.id, runId));
        if (isPromise(next)) await next;
      }
    }),
  );
}

/** The event as delivered: an entry event gets its entry from the leaf now. */
function complete(
  s: SinkState,
  lazy: LoopEventBody | (() => LoopEventBody),
  id: string,
  runId: string | undefined,
): EngineEvent {
  const body = typeof lazy === "function" ? lazy() : lazy;
  if (body.type === "message_update" || !ENTRY_TYPES.has(body.type)) return { id, runId, body: body as EventBody };
  // Not `{ ...body, entry }`: a spread followed by a key the source lacks is V8's slow path (~1 µs).
  const full = Object.assign({}, body) as EventBody & { entry: { id: string; parentId: string | null } };
  full.entry = { id, parentId: sinkLeafId(s) };
  if (!s.readLeaf) s.ownLeaf = id;
  return { id, runId, body: full };
}

/** Counts a delivery in flight; later emits chain behind it. */
function track(s: SinkState, delivery: Promise<void>): Promise<void> {
  s.inFlight++;
  const settled = delivery.then(
    () => {
      s.inFlight--;
    },
    (error: unknown) => {
      s.inFlight--;
      throw fail(s, error);
    },
  );
  s.tail = settled.catch(noop);
  return settled;
}

function fail(s: SinkState, error: unknown): Error {
  if (!s.failed) {
    s.failed = ensureError(error);
    s.onFailure?.(s.failed);
  }
  return s.failed;
}
