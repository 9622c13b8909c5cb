import type { AgentMessage, ThinkingLevel } from "@fleet/protocol";
import type { EngineModel, EnginePorts, LoopConfig, LoopContext, LoopEventBody } from "./types.js";

/** The mutable state of one run. `prepareNextTurn` may swap context, model and thinking level. */
export interface LoopState {
  context: LoopContext;
  config: LoopConfig;
  model: EngineModel;
  thinkingLevel: ThinkingLevel;
  /** Everything this run added, in order (`agent_end.messages`). */
  newMessages: AgentMessage[];
  /** Set once `agent_end` went out: the messages it carried. */
  ended?: AgentMessage[];
}

/** Something to tell when the run aborts. */
export interface AbortWatcher {
  onAbort(): void;
}

/** Where a run's events go (an `EventSink`, or the shell's wrapper around one). */
export interface Sink {
  /** Resolves once the event was accepted. May return the shared `RESOLVED` promise when it already was. */
  emit(body: LoopEventBody): Promise<void>;
  /** Set once the emit port failed: nothing more can be emitted. */
  readonly failure: Error | undefined;
}

/** What every step of one run shares: the ports, the event sink, the run's abort signal and its watch. */
export interface RunScope {
  ports: EnginePorts;
  sink: Sink;
  signal: AbortSignal | undefined;
  abort: AbortWatch;
}

export const ABORTED: unique symbol = Symbol("aborted");
export const RESOLVED: Promise<void> = Promise.resolve();
export const noop = (): void => {};
export const isPromise = <T>(value: T | Promise<T>): value is Promise<T> =>
  typeof (value as Promise<T> | undefined)?.then === "function";

/**
 * Tells parts of a run that the run aborted, so they stop waiting. One listener on the signal
 * per run (attached on first use), or none when the owner calls `fire()` itself (the shell).
 */
export class AbortWatch {
  readonly signal: AbortSignal | undefined;
  private readonly attach: boolean;
  private attached = false;
  private watchers: Set<AbortWatcher> | undefined;

  constructor(signal: AbortSignal | undefined, options: { attach: boolean } = { attach: true }) {
    this.signal = signal;
    this.attach = options.attach;
  }

  /** `watcher.onAbort()` runs once when the run aborts (at once if it already has). */
  watch(watcher: AbortWatcher): void {
    if (this.signal?.aborted) {
      watcher.onAbort();
      return;
    }
    if (!this.watchers) this.watchers = new Set();
    this.watchers.add(watcher);
    if (this.attach && !this.attached && this.signal) {
      this.attached = true;
      this.signal.addEventListener("abort", () => this.fire(), { once: true });
    }
  }

  unwatch(watcher: AbortWatcher): void {
    this.watchers?.delete(watcher);
  }

  /** Tells every watcher once. */
  fire(): void {
    if (!this.watchers || this.watchers.size === 0) return;
    const watchers = [...this.watchers];
    this.watchers.clear();
    for (const watcher of watchers) watcher.onAbort();
  }

  /** A promise that resolves with `ABORTED` when the run aborts; `dispose` stops watching. */
  promise(): { promise: Promise<typeof ABORTED>; dispose: () => void } {
    const watcher: AbortWatcher = { onAbort: noop };
    const promise = new Promise<typeof ABORTED>((resolve) => {
      watcher.onAbort = () => resolve(ABORTED);
      this.watch(watcher);
    });
    return { promise, dispose: () => this.unwatch(watcher) };
  }
}
