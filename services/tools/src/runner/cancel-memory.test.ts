import { describe, expect, it } from "vitest";
import { CANCEL_MEMORY_MS, createCancelMemory } from "./cancel-memory.js";

const clock = (start = 1_000_000) => {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
};

describe("cancel memory", () => {
  it("given a cancel that arrived before its call, when the call arrives, then it is cancelled, once", () => {
    const c = clock();
    const memory = createCancelMemory(c.now);
    memory.remember("s-1.t-1");
    c.advance(1_000);
    expect(memory.take("s-1.t-1")).toBe(true);
    expect(memory.take("s-1.t-1")).toBe(false);
  });

  it("given no cancel, when a call arrives, then it is not cancelled", () => {
    expect(createCancelMemory(clock().now).take("s-1.t-1")).toBe(false);
  });

  it("given a cancel older than the memory, when its call arrives, then it is not cancelled (and forgotten)", () => {
    const c = clock();
    const memory = createCancelMemory(c.now);
    memory.remember("s-1.t-1");
    c.advance(CANCEL_MEMORY_MS);
    expect(memory.take("s-1.t-1")).toBe(false);
    expect(memory.size()).toBe(0);
  });

  it("given more cancels than the maximum, then the oldest are forgotten down to half", () => {
    const c = clock();
    const memory = createCancelMemory(c.now, { ttlMs: 60_000, max: 4 });
    for (const k of ["a", "b", "c", "d", "e"]) {
      memory.remember(k);
      c.advance(1);
    }
    expect(memory.size()).toBe(2);
    expect(["a", "b", "c", "d", "e"].map((k) => memory.take(k))).toEqual([false, false, false, true, true]);
  });

  it("given expired cancels beyond the oldest half, when pruning, then they are dropped too", () => {
    const c = clock();
    const memory = createCancelMemory(c.now, { ttlMs: 100, max: 4 });
    for (const k of ["a", "b", "c", "d"]) memory.remember(k);
    c.advance(100);
    memory.remember("e");
    expect(memory.size()).toBe(1);
    expect(memory.take("e")).toBe(true);
  });
});
