/** How long a cancel that arrived before its call is remembered. */
export const CANCEL_MEMORY_MS = 10 * 60_000;
/** Remembered cancels above which the oldest (and any expired) are forgotten, down to half. */
export const CANCEL_MEMORY_MAX = 10_000;

/**
 * Cancels that overtook their call (best effort): `remember` a call's key when no run of it is
 * going on; `take` says, once, whether the call arriving now was cancelled less than `ttlMs` ago.
 * Time is an input; no I/O.
 */
export interface CancelMemory {
  remember(key: string): void;
  take(key: string): boolean;
  size(): number;
}

export function createCancelMemory(
  now: () => number,
  limits: { ttlMs: number; max: number } = { ttlMs: CANCEL_MEMORY_MS, max: CANCEL_MEMORY_MAX },
): CancelMemory {
  const seen = new Map<string, number>();
  return {
    remember(key) {
      seen.set(key, now());
      if (seen.size <= limits.max) return;
      // Oldest first (insertion order): drop until half full, and past that only what has expired.
      for (const [k, at] of seen) {
        if (seen.size <= limits.max / 2 && now() - at < limits.ttlMs) break;
        seen.delete(k);
      }
    },
    take(key) {
      const at = seen.get(key);
      if (at === undefined) return false;
      seen.delete(key);
      return now() - at < limits.ttlMs;
    },
    size: () => seen.size,
  };
}
