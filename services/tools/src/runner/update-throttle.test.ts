import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createUpdateThrottle } from "./update-throttle.js";

describe("update throttle", () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 10_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const given = (intervalMs = 100) => {
    const published: unknown[] = [];
    const throttle = createUpdateThrottle({
      intervalMs,
      now: () => Date.now(),
      publish: async (p) => {
        published.push(p);
      },
    });
    return { throttle, published };
  };

  it("given a burst of progress, then the first is published at once and only the latest of the rest after the interval", async () => {
    const { throttle, published } = given();
    throttle.push(1);
    await vi.advanceTimersByTimeAsync(0);
    throttle.push(2);
    throttle.push(3);
    await vi.advanceTimersByTimeAsync(50);
    expect(published).toEqual([1]);
    await vi.advanceTimersByTimeAsync(50);
    expect(published).toEqual([1, 3]);
  });

  it("when closed, then pending progress is published first and later pushes are ignored", async () => {
    const { throttle, published } = given();
    throttle.push(1);
    await vi.advanceTimersByTimeAsync(0);
    throttle.push(2);
    await throttle.close();
    expect(published).toEqual([1, 2]);
    throttle.push(3);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(published).toEqual([1, 2]);
  });

  it("when closed, then it resolves only after every publish settled, in order", async () => {
    const order: string[] = [];
    const throttle = createUpdateThrottle({
      intervalMs: 100,
      now: () => Date.now(),
      publish: (p) => new Promise((resolve) => setTimeout(() => resolve(order.push(`published ${p}`)), 30)),
    });
    throttle.push("a");
    const closed = throttle.close().then(() => order.push("closed"));
    await vi.advanceTimersByTimeAsync(100);
    await closed;
    expect(order).toEqual(["published a", "closed"]);
  });
});
