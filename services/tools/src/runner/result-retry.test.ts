import { describe, expect, it } from "vitest";
import { decideResultRetry, MAX_RESULT_ATTEMPTS } from "./result-retry.js";

describe("decideResultRetry", () => {
  it("given a failed publish of a running runner, then it retries after 50 ms doubling, capped at 2 s", () => {
    expect([0, 1, 2, 5, 6, 20].map((attempt) => decideResultRetry(attempt, false))).toEqual([
      { retry: true, delayMs: 50 },
      { retry: true, delayMs: 100 },
      { retry: true, delayMs: 200 },
      { retry: true, delayMs: 1_600 },
      { retry: true, delayMs: 2_000 },
      { retry: true, delayMs: 2_000 },
    ]);
  });

  it("given 30 failed attempts, then it gives up", () => {
    expect(decideResultRetry(MAX_RESULT_ATTEMPTS - 1, false)).toMatchObject({ retry: true });
    expect(decideResultRetry(MAX_RESULT_ATTEMPTS, false)).toEqual({ retry: false });
  });

  it("given a hard-stopped runner, then it gives up at once", () => {
    expect(decideResultRetry(0, true)).toEqual({ retry: false });
  });
});
