import { describe, expect, it } from "vitest";
import { decideStall } from "./stall-decision.js";

const STUCK = 10_000;

describe("decideStall", () => {
  it("given nothing pending beyond what is held, when checked, then no stretch and no remake", () => {
    expect(decideStall({ pending: 3, held: 3, stalledSince: 5_000, now: 20_000, stuckAfterMs: STUCK })).toEqual({
      remake: false,
      stalledSince: undefined,
    });
  });

  it("given more pending than held for the first time, when checked, then a stretch begins now", () => {
    expect(decideStall({ pending: 2, held: 1, stalledSince: undefined, now: 7_000, stuckAfterMs: STUCK })).toEqual({
      remake: false,
      stalledSince: 7_000,
    });
  });

  it("given a stretch shorter than stuckAfterMs, when checked, then it goes on without a remake", () => {
    expect(decideStall({ pending: 1, held: 0, stalledSince: 7_000, now: 16_999, stuckAfterMs: STUCK })).toEqual({
      remake: false,
      stalledSince: 7_000,
    });
  });

  it("given a stretch of stuckAfterMs, when checked, then the consumer is made again and the stretch ends", () => {
    expect(decideStall({ pending: 1, held: 0, stalledSince: 7_000, now: 17_000, stuckAfterMs: STUCK })).toEqual({
      remake: true,
      stalledSince: undefined,
    });
  });
});
