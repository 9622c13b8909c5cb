// The single path from the engine to the `emit` port: mints ids, fills `entry`, moves the leaf,
// and delivers events strictly one after another.
import { ENTRY_EVENT_TYPES, type EventBody, ensureError } from "@fleet/protocol";
import { isPromise, noop, RESOLVED } from "./run-scope.js";
import type { Emit, EngineEvent, LoopEventBody } from "./types.js";

const ENTRY_TYPES: ReadonlySet<string> = new Set(ENTRY_EVENT_TYPES);

export interface EventSinkOptions {
  emit: Emit;
  newId: () => string;
  /** The session's leaf before the first event (`null` for an empty session). */
  leafId: string | null;
  observer?: EventSinkObserver;
}

export interface EventSinkObserver {
  /** Called synchronously, in emission order, when an event is queued (the shell's state reducer). */
  onEvent(event: EngineEvent): void;
  /** Called once, when `emit` first throws. */
  onFailure(error: Error): void;
}

/**
 * Invariants:
 * - events reach `emit` in the order `emit` was called on the sink, never two at a time;
 * - every entry event gets `entry: {id, parentId: leaf}` and then becomes the leaf;
 * - after the port first throws, every later `emit` rejects with that same error (nothing more is sent).
 */
export class EventSink {
  /** `meta.runId` stamped on queued events; the shell sets it for the span of a run. */
  runId: string | undefined;
  private leaf: string | null;
  private tail: Promise<void> = RESOLVED;
  private inFlight = 0;
  private failed: Error | undefined;
  private readonly port: Emit;
  private readonly newId: () => string;
  private readonly observer: EventSinkObserver | undefined;
  /** True while a synchronous port call is on the stack: an emit made from inside it is queued. */
  private delivering = false;

  constructor(options: EventSinkOptions) {
    this.port = options.emit;
    this.newId = options.newId;
    this.leaf = options.leafId;
    this.observer = options.observer;
  }

  get leafId(): string | null {
    return this.leaf;
  }

  get failure(): Error | undefined {
    return this.failed;
  }

  /** Moves the leaf without an event (the service applied a navigation or a compaction itself). */
  moveLeaf(leafId: string | null): void {
    this.leaf = leafId;
  }

  /** Queues one event; resolves once the port accepted it (and every event queued before it). */
  emit(body: LoopEventBody): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    const id = this.newId();
    let full = body as EventBody;
    if (body.type !== "message_update" && ENTRY_TYPES.has(body.type)) {
      full = { ...body, entry: { id, parentId: this.leaf } } as EventBody;
      this.leaf = id;
    }
    const event: EngineEvent = { id, runId: this.runId, body: full };
    this.observer?.onEvent(event);
    if (this.inFlight === 0 && !this.delivering) {
      // Nothing queued: call the port now; a port that returns synchronously costs no promise.
      let accepted: Promise<void> | void;
      this.delivering = true;
      try {
        accepted = this.port(event);
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
        return this.port(event);
      }),
    );
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
      this.observer?.onFailure(this.failed);
    }
    return this.failed;
  }
}
