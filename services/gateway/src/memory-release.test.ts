import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createMemoryRelease } from "./memory-release.js";

describe("gateway / memory release after a burst of closed connections", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  const start = () => {
    const collected: number[] = [];
    const release = createMemoryRelease({
      minClosed: 10,
      quietMs: 1_000,
      quietCloses: 2,
      minIntervalMs: 10_000,
      followUpMs: 2_000,
      now: () => Date.now(),
      collect: (closed) => collected.push(closed),
    });
    const close = (n: number) => {
      for (let i = 0; i < n; i++) release.closed();
    };
    return { release, collected, close };
  };

  it("collects once the burst is over and once more later; not while it goes on", () => {
    const { release, collected, close } = start();
    close(10);
    for (let i = 0; i < 3; i++) {
      close(5);
      vi.advanceTimersByTime(1_000);
    }
    expect(collected).toEqual([]);
    // A trickle (a scraper's connection each 500 ms) does not hold the collection off.
    close(1);
    vi.advanceTimersByTime(500);
    close(1);
    vi.advanceTimersByTime(500);
    expect(collected).toEqual([27]);
    vi.advanceTimersByTime(2_000);
    expect(collected).toEqual([27, 0]);
    release.stop();
  });

  it("ignores a few closes, and collects at most once per interval", () => {
    const { release, collected, close } = start();
    close(9);
    vi.advanceTimersByTime(5_000);
    expect(collected).toEqual([]);
    close(1);
    vi.advanceTimersByTime(1_000);
    expect(collected).toEqual([10]);
    close(10);
    vi.advanceTimersByTime(2_000);
    expect(collected).toEqual([10, 0]);
    // The second burst waits for the interval: 10 s after the first collection (at 6 s).
    vi.advanceTimersByTime(7_000);
    expect(collected).toEqual([10, 0]);
    vi.advanceTimersByTime(1_000);
    expect(collected).toEqual([10, 0, 10]);
    release.stop();
    close(30);
    vi.advanceTimersByTime(60_000);
    expect(collected).toEqual([10, 0, 10]);
  });
});
