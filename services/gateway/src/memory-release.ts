// Gives memory back after a burst of connections. What 2,000 dropped SSE clients allocated is
// garbage once they close (nothing holds it), but V8 collects when allocation asks for it: an idle
// gateway kept 55-70 MB of it for up to a minute. After a burst of closes, then a quiet moment,
// one asynchronous major collection returns it within a couple of seconds.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

export interface MemoryReleaseOptions {
  /** Closed connections since the last collection that make a burst. */
  minClosed: number;
  /** The burst is over once a period this long has at most `quietCloses` closes. */
  quietMs: number;
  quietCloses: number;
  /** Least time between two bursts' collections, however many bursts. */
  minIntervalMs: number;
  /**
   * A burst's second collection comes this long after its first: V8 gives back the young
   * generation it grew only once allocation has been low for a few seconds.
   */
  followUpMs: number;
  /** Starts a major garbage collection; `closed`: the connections closed since the burst's first one (0: the follow-up). */
  collect(closed: number): void;
  now(): number;
}

export interface MemoryRelease {
  /** Counts one closed connection. */
  closed(): void;
  stop(): void;
}

/**
 * Contract: once `minClosed` connections closed since the last collection, `collect` runs at the
 * end of the first `quietMs` period with at most `quietCloses` closes (the burst is over; a steady
 * trickle, a metrics scraper, does not hold it off), at most once per `minIntervalMs`, and again
 * `followUpMs` later. While closes keep coming fast, the allocation itself keeps V8 collecting.
 */
export function createMemoryRelease(opts: MemoryReleaseOptions): MemoryRelease {
  let closedSince = 0;
  let closedAtArm = 0;
  let lastCollect = Number.NEGATIVE_INFINITY;
  let timer: NodeJS.Timeout | undefined;
  let followUp: NodeJS.Timeout | undefined;
  let stopped = false;
  const arm = (ms: number) => {
    closedAtArm = closedSince;
    timer = setTimeout(check, ms).unref();
  };
  const check = () => {
    timer = undefined;
    if (closedSince - closedAtArm > opts.quietCloses) return arm(opts.quietMs);
    const wait = lastCollect + opts.minIntervalMs - opts.now();
    if (wait > 0) return arm(Math.max(wait, opts.quietMs));
    const closed = closedSince;
    closedSince = 0;
    lastCollect = opts.now();
    opts.collect(closed);
    clearTimeout(followUp);
    followUp = setTimeout(() => opts.collect(0), opts.followUpMs).unref();
  };
  return {
    closed() {
      if (stopped) return;
      closedSince++;
      if (!timer && closedSince >= opts.minClosed) arm(opts.quietMs);
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
      clearTimeout(followUp);
    },
  };
}

type Gc = (options?: { type: "major" | "minor"; execution: "sync" | "async" }) => void;

/**
 * V8's `gc()` for an asynchronous major collection: the global one when node runs with
 * `--expose-gc`, else one from a fresh context after turning the flag on (it applies to contexts
 * created afterwards; the main context is unchanged).
 */
export function majorCollection(): () => void {
  let gc = (globalThis as { gc?: Gc }).gc;
  if (!gc) {
    setFlagsFromString("--expose-gc");
    gc = runInNewContext("gc") as Gc;
  }
  const collect = gc;
  return () => collect({ type: "major", execution: "async" });
}
