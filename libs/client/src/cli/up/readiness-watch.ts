// `fleet up`'s readiness report for one deployment (a tenant's, or the stack's): polls until it is
// ready, warns once when that takes long, and still reports it ready when it comes.

export interface ReadinessWatchOptions<R> {
  /** The deployment's state now; `undefined` when it cannot be read. */
  inspect: () => Promise<R | undefined>;
  isReady: (report: R) => boolean;
  /** Called once, with the first ready report. */
  onReady: (report: R) => void;
  /** Called once, when it is not ready `warnAfterMs` after the start. */
  onSlow: () => void;
  warnAfterMs: number;
  /** Between two polls; `slowIntervalMs` once warned. */
  intervalMs: number;
  slowIntervalMs: number;
  now: () => number;
}

export interface ReadinessWatch {
  /** Stops polling (the process is stopping); no report follows. */
  stop(): void;
}

/**
 * Contract: `onReady` runs once, when a poll finds the deployment ready, however long that took (a
 * loaded machine starts services slowly); `onSlow` runs at most once, before it, when
 * `warnAfterMs` passed without it. Polls never overlap; none starts after `stop`.
 */
export function watchReadiness<R>(opts: ReadinessWatchOptions<R>): ReadinessWatch {
  const startedAt = opts.now();
  let warned = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const poll = async () => {
    timer = undefined;
    if (stopped) return;
    const report = await opts.inspect().catch(() => undefined);
    if (stopped) return;
    if (report !== undefined && opts.isReady(report)) {
      opts.onReady(report);
      return;
    }
    if (!warned && opts.now() - startedAt > opts.warnAfterMs) {
      warned = true;
      opts.onSlow();
    }
    timer = setTimeout(() => void poll(), warned ? opts.slowIntervalMs : opts.intervalMs);
  };
  void poll();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
