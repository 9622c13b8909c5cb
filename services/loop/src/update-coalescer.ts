import type { StreamDelta } from "@fleet/protocol";

/**
 * Coalesces streaming deltas into `message_update` events: one flush per `windowMs` after the first
 * buffered delta, or as soon as `maxDeltas` are buffered, whichever comes first. `windowMs = 0`
 * flushes every delta on its own. Ordering contract: callers `drain()` before appending any other
 * event, so deltas never overtake or trail the events around them.
 */
export interface UpdateCoalescer {
  push(deltas: readonly StreamDelta[]): void;
  /** Flushes whatever is buffered and waits until every flush so far has completed. */
  drain(): Promise<void>;
  dispose(): void;
}

export function createUpdateCoalescer(opts: {
  windowMs: number;
  maxDeltas: number;
  flush: (deltas: StreamDelta[]) => Promise<void>;
  onError?: (err: unknown) => void;
}): UpdateCoalescer {
  let buffer: StreamDelta[] = [];
  let timer: NodeJS.Timeout | undefined;
  let inflight: Promise<void> = Promise.resolve();

  const flushBuffer = () => {
    if (timer) {
      clearTimeout(timer);
      timer = undefined;
    }
    if (buffer.length === 0) return;
    const batch = buffer;
    buffer = [];
    inflight = inflight.then(() => opts.flush(batch)).catch((err) => opts.onError?.(err));
  };

  return {
    push(deltas) {
      buffer.push(...deltas);
      if (opts.windowMs <= 0 || buffer.length >= opts.maxDeltas) flushBuffer();
      else if (!timer) timer = setTimeout(flushBuffer, opts.windowMs);
    },
    drain() {
      flushBuffer();
      // Never rejects (a failed flush is reported to onError): the chain itself, no wrapper.
      return inflight;
    },
    dispose() {
      if (timer) clearTimeout(timer);
      timer = undefined;
      buffer = [];
    },
  };
}
