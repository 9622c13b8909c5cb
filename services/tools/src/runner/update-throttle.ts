/**
 * Throttles a call's progress: at most one `publish` per `intervalMs`, always with the latest
 * partial result, in order. `close` publishes what is pending (the trailing edge, so the last
 * progress precedes the result), ignores later pushes, and resolves when every publish settled.
 * Contract: `publish` must not reject.
 */
export interface UpdateThrottle {
  push(partial: unknown): void;
  close(): Promise<void>;
}

export function createUpdateThrottle(opts: {
  intervalMs: number;
  now: () => number;
  publish: (partial: unknown) => Promise<unknown>;
}): UpdateThrottle {
  let chain: Promise<unknown> = Promise.resolve();
  let pending: { partial: unknown } | undefined;
  let timer: NodeJS.Timeout | undefined;
  let lastUpdate = 0;
  let closed = false;

  const flush = () => {
    timer = undefined;
    if (!pending || closed) return;
    const { partial } = pending;
    pending = undefined;
    lastUpdate = opts.now();
    chain = chain.then(() => opts.publish(partial));
  };

  return {
    push(partial) {
      if (closed) return;
      pending = { partial };
      if (!timer) timer = setTimeout(flush, Math.max(0, opts.intervalMs - (opts.now() - lastUpdate)));
    },
    async close() {
      if (timer) clearTimeout(timer);
      flush();
      closed = true;
      await chain;
    },
  };
}
