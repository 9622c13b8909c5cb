// `state()`: a session's agent state and tree, folded live from its event subject.
import type { FleetEvent } from "@fleet/protocol";
import { FleetError } from "./errors.js";
import { emptySessionView, foldSessionView, foldSessionViewEvents, type SessionView } from "./session-view.js";

/** One applied event and the view right after it. */
export type SessionChangeListener = (view: SessionView, event: FleetEvent) => void;

/**
 * A live fold of one session. `view` is always the fold of every event up to `view.seq`, in stream
 * order; listeners run synchronously after each event. Call `close()` to stop following the log.
 */
export class LiveSession {
  readonly sessionId: string;
  #view: SessionView = emptySessionView();
  #listeners = new Set<SessionChangeListener>();
  #failure: Error | undefined;
  #closed = false;
  readonly #abort: AbortController;

  /** @internal Created by `FleetClient.state()`. */
  constructor(sessionId: string, abort: AbortController) {
    this.sessionId = sessionId;
    this.#abort = abort;
  }

  get view(): SessionView {
    return this.#view;
  }
  /** Shorthand for `view.agent`. */
  get agent(): SessionView["agent"] {
    return this.#view.agent;
  }
  get seq(): number {
    return this.#view.seq;
  }
  get closed(): boolean {
    return this.#closed;
  }

  /** Registers a listener; returns the function that removes it. */
  onChange(listener: SessionChangeListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Resolves with the first view (the current one included) for which `predicate` holds.
   * Rejects with a `timeout` FleetError after `timeoutMs` (default 30 s), or when the session closes.
   */
  waitFor(predicate: (view: SessionView) => boolean, timeoutMs = 30_000): Promise<SessionView> {
    if (predicate(this.#view)) return Promise.resolve(this.#view);
    if (this.#closed) return Promise.reject(this.#closedError());
    return new Promise((resolve, reject) => {
      const off = this.onChange((view) => {
        if (!predicate(view)) return;
        finish();
        resolve(view);
      });
      const onClose = () => {
        finish();
        reject(this.#closedError());
      };
      const timer = setTimeout(() => {
        finish();
        reject(
          new FleetError("timeout", "timeout", `session ${this.sessionId}: condition not met within ${timeoutMs} ms`),
        );
      }, timeoutMs);
      const finish = () => {
        clearTimeout(timer);
        off();
        this.#abort.signal.removeEventListener("abort", onClose);
      };
      this.#abort.signal.addEventListener("abort", onClose, { once: true });
    });
  }

  /** Stops following the log. Idempotent. */
  close(): void {
    this.#closed = true;
    this.#abort.abort();
  }

  /** @internal The events that existed when `state()` was called, folded at once (before any listener). */
  catchUp(records: readonly { seq: number; event: FleetEvent }[]): void {
    this.#view = foldSessionViewEvents(this.#view, records);
  }

  /** @internal */
  apply(seq: number, event: FleetEvent): void {
    this.#view = foldSessionView(this.#view, seq, event);
    for (const listener of this.#listeners) listener(this.#view, event);
  }

  /** @internal */
  fail(error: Error): void {
    this.#failure = error;
    this.close();
  }

  #closedError(): Error {
    return this.#failure ?? new FleetError("unavailable", "closed", `session ${this.sessionId}: live state closed`);
  }
}
