// A seeded pseudo-random generator (mulberry32): the same seed gives the same fault schedule.

/** Draws from one seeded sequence. Contract: pure given the seed; never throws. */
export interface Prng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [min, max] (both inclusive). */
  int(min: number, max: number): number;
  /** One element, weighted by `weight`. */
  pick<T>(items: readonly T[], weight?: (item: T) => number): T;
}

export function createPrng(seed: number): Prng {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    pick: (items, weight = () => 1) => {
      const total = items.reduce((sum, item) => sum + weight(item), 0);
      let r = next() * total;
      for (const item of items) {
        r -= weight(item);
        if (r < 0) return item;
      }
      const last = items[items.length - 1];
      if (last === undefined) throw new Error("pick from an empty list");
      return last;
    },
  };
}
