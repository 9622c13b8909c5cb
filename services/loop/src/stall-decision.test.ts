import { describe, expect, it } from "vitest";
import { decideStall } from "./stall-decision.js";

const STUCK = 10_000;
/** Nothing stored beyond what was delivered. */
const QUIET = { undelivered: 0, stored: 0, delivered: 40, deliveredBefore: 40, maxAckPending: 1000 };

describe("decideStall", () => {
  it("given nothing pending beyond what is held, when checked, then no stretch and no remake", () => {
    expect(
      decideStall({ ...QUIET, pending: 3, held: 3, stalledSince: 5_000, now: 20_000, stuckAfterMs: STUCK }),
    ).toEqual({
      remake: false,
      sweep: false,
      stalledSince: undefined,
    });
  });

  it("given more pending than held for the first time, when checked, then a stretch begins now", () => {
    expect(
      decideStall({ ...QUIET, pending: 2, held: 1, stalledSince: undefined, now: 7_000, stuckAfterMs: STUCK }),
    ).toEqual({
      remake: false,
      sweep: false,
      stalledSince: 7_000,
    });
  });

  it("given a stretch shorter than stuckAfterMs, when checked, then it goes on without a remake", () => {
    expect(
      decideStall({ ...QUIET, pending: 1, held: 0, stalledSince: 7_000, now: 16_999, stuckAfterMs: STUCK }),
    ).toEqual({
      remake: false,
      sweep: false,
      stalledSince: 7_000,
    });
  });

  it("given a stretch of stuckAfterMs, when checked, then the consumer is made again and the stretch ends", () => {
    expect(
      decideStall({ ...QUIET, pending: 1, held: 0, stalledSince: 7_000, now: 17_000, stuckAfterMs: STUCK }),
    ).toEqual({
      remake: true,
      sweep: false,
      stalledSince: undefined,
    });
  });

  it("given undelivered commands and no delivery since the last check, when checked, then a stretch begins", () => {
    const input = {
      pending: 0,
      held: 0,
      undelivered: 1,
      stored: 1,
      delivered: 40,
      deliveredBefore: 40,
      maxAckPending: 1000,
    };
    expect(decideStall({ ...input, stalledSince: undefined, now: 7_000, stuckAfterMs: STUCK })).toEqual({
      remake: false,
      sweep: false,
      stalledSince: 7_000,
    });
    expect(decideStall({ ...input, stalledSince: 7_000, now: 17_000, stuckAfterMs: STUCK })).toEqual({
      remake: true,
      sweep: false,
      stalledSince: undefined,
    });
  });

  it("given undelivered commands while the consumer still delivers, when checked, then it is not stuck", () => {
    const input = {
      pending: 2,
      held: 2,
      undelivered: 5,
      stored: 7,
      delivered: 41,
      deliveredBefore: 40,
      maxAckPending: 1000,
    };
    expect(decideStall({ ...input, stalledSince: 7_000, now: 17_000, stuckAfterMs: STUCK })).toEqual({
      remake: false,
      sweep: false,
      stalledSince: undefined,
    });
  });

  it("given undelivered commands behind a full max_ack_pending, when checked, then it is not stuck", () => {
    const input = {
      pending: 1000,
      held: 1000,
      undelivered: 5,
      stored: 1005,
      delivered: 40,
      deliveredBefore: 40,
      maxAckPending: 1000,
    };
    expect(decideStall({ ...input, stalledSince: 7_000, now: 17_000, stuckAfterMs: STUCK })).toEqual({
      remake: false,
      sweep: false,
      stalledSince: undefined,
    });
  });

  it("given commands stored that the consumer neither holds pending nor will deliver, when checked for stuckAfterMs, then it is made again and the stored commands are swept", () => {
    const input = {
      pending: 0,
      held: 0,
      undelivered: 0,
      stored: 1,
      delivered: 48,
      deliveredBefore: 48,
      maxAckPending: 1000,
    };
    expect(decideStall({ ...input, stalledSince: undefined, now: 7_000, stuckAfterMs: STUCK })).toEqual({
      remake: false,
      sweep: false,
      stalledSince: 7_000,
    });
    expect(decideStall({ ...input, stalledSince: 7_000, now: 17_000, stuckAfterMs: STUCK })).toEqual({
      remake: true,
      sweep: true,
      stalledSince: undefined,
    });
  });

  it("given every stored command pending or undelivered, when checked, then nothing was skipped", () => {
    const input = {
      pending: 2,
      held: 2,
      undelivered: 1,
      stored: 3,
      delivered: 48,
      deliveredBefore: 47,
      maxAckPending: 1000,
    };
    expect(decideStall({ ...input, stalledSince: 7_000, now: 17_000, stuckAfterMs: STUCK })).toEqual({
      remake: false,
      sweep: false,
      stalledSince: undefined,
    });
  });
});
