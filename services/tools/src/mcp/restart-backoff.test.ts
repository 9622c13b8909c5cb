import { describe, expect, it } from "vitest";
import { decideRestartDelay } from "./restart-backoff.js";

describe("decideRestartDelay", () => {
  it("doubles from the base up to the cap", () => {
    const backoff = { baseMs: 500, capMs: 5_000 };
    expect([0, 1, 2, 3, 4, 5, 60].map((n) => decideRestartDelay(n, backoff))).toEqual([
      500, 1_000, 2_000, 4_000, 5_000, 5_000, 5_000,
    ]);
  });

  it("defaults to 0.5 s doubling to 30 s", () => {
    expect(decideRestartDelay(0)).toBe(500);
    expect(decideRestartDelay(100)).toBe(30_000);
  });
});
