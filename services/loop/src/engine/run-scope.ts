import type { AgentMessage, ThinkingLevel } from "@fleet/protocol";
import type { DraftEvent } from "../session-core/drafts.js";
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
  /** The emit port's failure, once it failed: nothing more can be emitted. */
  failed(): Error | undefined;
  /** See `sinkEmitDecided` (a session engine's sink; the stateless loop's has none). */
  emitDecided?(decide: () => readonly DraftEvent[]): Promise<readonly DraftEvent[]>;
  /** See `sinkEmitDecidedNow` (present with `emitDecided`). */
  emitDecidedNow?<A>(decide: (arg: A) => readonly DraftEvent[], arg: A): Promise<void>;
}

/** What every step of one run shares: the ports, the event sink, the run's abort signal and its watch. */
export interface RunScope {
  ports: EnginePorts;
  sink: Sink;
  signal: AbortSignal | undefined;
  abort: AbortWatch;
}

const NO_DRAFTS: readonly DraftEvent[] = [];

/**
 * Emits what a decision of the session's fold decided (`sink.emitDecided`, which the caller checked
 * is there); `undefined` from `decide` emits nothing and resolves with no drafts.
 */
export function emitDecision(
  run: RunScope,
  decide: () => readonly DraftEvent[] | undefined,
): Promise<readonly DraftEvent[]> {
  const emitDecided = run.sink.emitDecided as NonNullable<Sink["emitDecided"]>;
  return emitDecided.call(run.sink, () => decide() ?? NO_DRAFTS);
}

export const ABORTED: unique symbol = Symbol("aborted");
export const RESOLVED: Promise<void> = Promise.resolve();
export const noop = (): void => {};
export const isPromise = <T>(value: T | Promise<T>): value is Promise<T> =>
  typeof (value as Promise<T> | undefined)?.then === "function";

/**
 * Tells parts of a run that the run aborted, so they stop waiting. One listener on the signal
 * per run (attached on first use), or none when the owner calls `fire()` itself (the shell).
 * A literal (one fixed hidden class for every run) whose methods are the module functions below.
 */
export interface AbortWatch {
  readonly signal: AbortSignal | undefined;
  readonly attach: boolean;
  attached: boolean;
  watchers: Set<AbortWatcher> | undefined;
  /** `watcher.onAbort()` runs once when the run aborts (at once if it already has). */
  watch(watcher: AbortWatcher): void;
  unwatch(watcher: AbortWatcher): void;
  /** Tells every watcher once. */
  fire(): void;
  /** A promise that resolves with `ABORTED` when the run aborts; `dispose` stops watching. */
  promise(): AbortPromise;
}

export function abortWatch(
  signal: AbortSignal | undefined,
  options: { attach: boolean } = { attach: true },
): AbortWatch {
  return {
    signal,
    attach: options.attach,
    attached: false,
    watchers: undefined,
    watch: watchAbort,
    unwatch: unwatchAbort,
    fire: fireAbort,
    promise: abortPromise,
  };
}

function watchAbort(this: AbortWatch, watcher: AbortWatcher): void {
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

function unwatchAbort(this: AbortWatch, watcher: AbortWatcher): void {
  this.watchers?.delete(watcher);
}

function fireAbort(this: AbortWatch): void {
  if (!this.watchers || this.watchers.size === 0) return;
  const watchers = [...this.watchers];
  this.watchers.clear();
  for (const watcher of watchers) watcher.onAbort();
}

/** `AbortWatch.promise()`: resolves with `ABORTED` when the run aborts, until disposed. */
export interface AbortPromise extends AbortWatcher {
  readonly promise: Promise<typeof ABORTED>;
  dispose(): void;
}

interface OwnAbortPromise extends AbortPromise {
  readonly watch: AbortWatch;
  resolve: (value: typeof ABORTED) => void;
}

function abortPromise(this: AbortWatch): AbortPromise {
  let resolve: (value: typeof ABORTED) => void = noop;
  const promise = new Promise<typeof ABORTED>((settle) => {
    resolve = settle;
  });
  const own: OwnAbortPromise = { promise, watch: this, resolve, onAbort: resolveAborted, dispose: disposeAbortPromise };
  this.watch(own);
  return own;
}

function resolveAborted(this: OwnAbortPromise): void {
  this.resolve(ABORTED);
}

function disposeAbortPromise(this: OwnAbortPromise): void {
  this.watch.unwatch(this);
}
