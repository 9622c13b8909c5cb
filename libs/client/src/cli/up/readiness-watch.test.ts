import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { watchReadiness } from "./readiness-watch.js";

describe("fleet up / readiness report", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  /** A deployment that becomes ready at `readyAtMs`; what the watch reported, in order. */
  const start = (readyAtMs: number, inspect?: () => Promise<{ ready: boolean } | undefined>) => {
    const said: string[] = [];
    let polls = 0;
    const watch = watchReadiness({
      inspect:
        inspect ??
        (async () => {
          polls++;
          return { ready: Date.now() >= readyAtMs };
        }),
      isReady: (r) => r.ready,
      onReady: () => said.push(`ready at ${Date.now()}`),
      onSlow: () => said.push(`slow at ${Date.now()}`),
      warnAfterMs: 30_000,
      intervalMs: 500,
      slowIntervalMs: 2_000,
      now: Date.now,
    });
    return { said, watch, polls: () => polls };
  };

  it("reports a deployment ready as soon as a poll finds it, without a warning", async () => {
    vi.setSystemTime(0);
    const { said } = start(1_200);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(said).toEqual(["ready at 1500"]);
  });

  it("warns once when it takes longer, and still reports it ready when it comes (a loaded machine)", async () => {
    vi.setSystemTime(0);
    const { said, polls } = start(47_000);
    await vi.advanceTimersByTimeAsync(40_000);
    expect(said).toEqual(["slow at 30500"]);
    await vi.advanceTimersByTimeAsync(20_000);
    expect(said).toEqual(["slow at 30500", "ready at 48500"]);
    const after = polls();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(polls()).toBe(after);
  });

  it("takes an unreadable deployment as not ready, and polls no more once stopped", async () => {
    vi.setSystemTime(0);
    let polls = 0;
    const { said, watch } = start(0, async () => {
      polls++;
      throw new Error("nats: timeout");
    });
    await vi.advanceTimersByTimeAsync(31_000);
    expect(said).toEqual(["slow at 30500"]);
    watch.stop();
    const stoppedAt = polls;
    await vi.advanceTimersByTimeAsync(10_000);
    expect(polls).toBe(stoppedAt);
  });
});
