// The single path from the engine to the `emit` port: mints ids, fills `entry` from the leaf, and
// delivers events strictly one after another.
import { ENTRY_EVENT_TYPES, type EventBody, ensureError } from "@fleet/protocol";
import { isPromise, noop, RESOLVED } from "./run-scope.js";
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
 * Invariants:
 * - events reach `emit` in the order `emit` was called on the sink, never two at a time;
 * - every entry event gets `entry: {id, parentId: leaf}`, the leaf as it is when the event is delivered;
 * - after the port first throws, every later `emit` rejects with that same error (nothing more is sent).
 */
export class EventSink {
  /** `meta.runId` stamped on queued events; the shell sets it for the span of a run. */
  runId: string | undefined;
  private ownLeaf: string | null;
  private readonly readLeaf: (() => string | null) | undefined;
  private tail: Promise<void> = RESOLVED;
  private inFlight = 0;
  private failed: Error | undefined;
  private readonly port: Emit;
  private readonly newId: () => string;
  private readonly onFailure: ((error: Error) => void) | undefined;
  /** True while a synchronous port call is on the stack: an emit made from inside it is queued. */
  private delivering = false;

  constructor(options: EventSinkOptions) {
    this.port = options.emit;
    this.newId = options.newId;
    this.readLeaf = typeof options.leafId === "function" ? options.leafId : undefined;
    this.ownLeaf = typeof options.leafId === "function" ? null : options.leafId;
    this.onFailure = options.onFailure;
  }

  get leafId(): string | null {
    return this.readLeaf ? this.readLeaf() : this.ownLeaf;
  }

  get failure(): Error | undefined {
    return this.failed;
  }

  /**
   * Queues one event (with `id`, default a fresh one); resolves once the port accepted it and every
   * event queued before it. A function body is computed at delivery, from the session as it is then
   * (a `queue_update` that must not overwrite what was queued meanwhile).
   */
  emit(body: LoopEventBody | (() => LoopEventBody), id: string = this.newId()): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    const runId = this.runId;
    if (this.inFlight === 0 && !this.delivering) {
      // Nothing queued: call the port now; a port that returns synchronously costs no promise.
      let accepted: Promise<void> | void;
      this.delivering = true;
      try {
        accepted = this.port(this.complete(body, id, runId));
      } catch (error) {
        return Promise.reject(this.fail(error));
      } finally {
        this.delivering = false;
      }
      if (!isPromise(accepted)) return RESOLVED;
      return this.track(accepted);
    }
    return this.track(
      this.tail.then(() => {
        if (this.failed) throw this.failed;
        return this.port(this.complete(body, id, runId));
      }),
    );
  }

  /**
   * Runs `fn` in the delivery order: after every event queued before it was accepted, and before any
   * event queued after it is delivered. The shell appends a command's events this way, so that they
   * are decided on the fold of every event the engine emitted before them. A failure of `fn` is its
   * caller's: the sink goes on.
   */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    if (this.failed) return Promise.reject(this.failed);
    const run = this.inFlight === 0 && !this.delivering ? fn() : this.tail.then(fn);
    this.inFlight++;
    const settled = run.finally(() => {
      this.inFlight--;
    });
    this.tail = settled.then(noop, noop);
    return settled;
  }

  /** The event as delivered: an entry event gets its entry from the leaf now. */
  private complete(lazy: LoopEventBody | (() => LoopEventBody), id: string, runId: string | undefined): EngineEvent {
    const body = typeof lazy === "function" ? lazy() : lazy;
    if (body.type === "message_update" || !ENTRY_TYPES.has(body.type)) return { id, runId, body: body as EventBody };
    const full = { ...body, entry: { id, parentId: this.leafId } } as EventBody;
    if (!this.readLeaf) this.ownLeaf = id;
    return { id, runId, body: full };
  }

  /** Counts a delivery in flight; later emits chain behind it. */
  private track(delivery: Promise<void>): Promise<void> {
    this.inFlight++;
    const settled = delivery.then(
      () => {
        this.inFlight--;
      },
      (error: unknown) => {
        this.inFlight--;
        throw this.fail(error);
      },
    );
    this.tail = settled.catch(noop);
    return settled;
  }

  private fail(error: unknown): Error {
    if (!this.failed) {
      this.failed = ensureError(error);
      this.onFailure?.(this.failed);
    }
    return this.failed;
  }
}
