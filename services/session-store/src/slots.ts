/**
 * A counting semaphore. The partition workers apply their batches through it, so at most `size`
 * batches hold the CPU at once: lease renewals and queries on the same event loop then wait behind a
 * bounded amount of work instead of one batch per held partition.
 */
export interface Slots {
  run<T>(work: () => Promise<T>): Promise<T>;
}

export function createSlots(size: number): Slots {
  let free = Math.max(1, size);
  const waiting: Array<() => void> = [];
  return {
    async run(work) {
      if (free > 0) free--;
      else await new Promise<void>((resolve) => waiting.push(resolve));
      try {
        return await work();
      } finally {
        const next = waiting.shift();
        if (next) next();
        else free++;
      }
    },
  };
}

/** Lets I/O callbacks run (the poll phase) before continuing a long synchronous loop. */
export const yieldToIo = () => new Promise<void>((resolve) => setImmediate(resolve));
