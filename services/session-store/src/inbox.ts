/**
 * A FIFO between a push source (a NATS consume callback) and one async consumer that takes batches:
 * everything that arrived while the previous batch was being applied becomes the next batch.
 */
export interface Inbox<T> {
  push(item: T): void;
  /** Up to `max` items; waits until at least one arrives, `waitMs` passes ([] then) or `close()`. */
  take(max: number, waitMs: number): Promise<T[]>;
  /** Resolves once fewer than `n` items are queued (or on `close()`): the producer's backpressure. */
  below(n: number): Promise<void>;
  /** Removes and returns everything queued. */
  drain(): T[];
  close(): void;
  readonly length: number;
}

export function createInbox<T>(): Inbox<T> {
  let items: T[] = [];
  let head = 0;
  let wake: (() => void) | undefined;
  let closed = false;
  let waiters: Array<{ n: number; resolve: () => void }> = [];
  const size = () => items.length - head;
  const release = () => {
    if (waiters.length === 0) return;
    const keep: typeof waiters = [];
    for (const w of waiters) {
      if (closed || size() < w.n) w.resolve();
      else keep.push(w);
    }
    waiters = keep;
  };
  return {
    push(item) {
      items.push(item);
      wake?.();
    },
    async take(max, waitMs) {
      if (size() === 0 && !closed) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, waitMs);
          function done() {
            clearTimeout(timer);
            wake = undefined;
            resolve();
          }
          wake = done;
        });
      }
      const n = Math.min(max, size());
      const out = items.slice(head, head + n);
      head += n;
      if (head > 4096 && head * 2 > items.length) {
        items = items.slice(head);
        head = 0;
      }
      release();
      return out;
    },
    below(n) {
      if (closed || size() < n) return Promise.resolve();
      return new Promise<void>((resolve) => waiters.push({ n, resolve }));
    },
    drain() {
      const out = items.slice(head);
      items = [];
      head = 0;
      release();
      return out;
    },
    close() {
      closed = true;
      wake?.();
      release();
    },
    get length() {
      return size();
    },
  };
}
