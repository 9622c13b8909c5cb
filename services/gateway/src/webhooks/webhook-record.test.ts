import { describe, expect, it } from "vitest";
import { type DeliveryAttempt, EMPTY_STATUS, withAttempt } from "./webhook-record.js";

const attempt = (at: number, outcome: DeliveryAttempt["outcome"], seq = 1): DeliveryAttempt => ({
  seq,
  sessionId: "s-1",
  eventType: "agent_end",
  attempt: 1,
  at,
  durationMs: 1,
  outcome,
});

describe("webhook status", () => {
  it("counts deliveries and failures, and the run of failures since the last success", () => {
    const s = [attempt(1, "http"), attempt(2, "timeout"), attempt(3, "ok"), attempt(4, "refused")].reduce(
      (status, a) => withAttempt(status, a),
      EMPTY_STATUS,
    );
    expect(s).toMatchObject({ delivered: 1, failed: 3, consecutiveFailures: 1, lastSuccessAt: 3, lastFailureAt: 4 });
    expect(s.lastDeliveries.map((a) => a.at)).toEqual([4, 3, 2, 1]);
    expect(s.lastFailures.map((a) => a.at)).toEqual([4, 2, 1]);
  });

  it("orders attempts recorded late by when they ended", () => {
    // A success written after a later failure does not end that failure's run, nor does an early failure count.
    const failedLater = withAttempt(withAttempt(EMPTY_STATUS, attempt(10, "http")), attempt(5, "ok"));
    expect(failedLater).toMatchObject({ consecutiveFailures: 1, delivered: 1 });
    expect(failedLater.lastDeliveries.map((a) => a.at)).toEqual([10, 5]);
    const failedEarlier = withAttempt(withAttempt(EMPTY_STATUS, attempt(10, "ok")), attempt(5, "http"));
    expect(failedEarlier).toMatchObject({ consecutiveFailures: 0, failed: 1 });
  });

  it("keeps the last 20 of each", () => {
    let s = EMPTY_STATUS;
    for (let i = 1; i <= 30; i++) s = withAttempt(s, attempt(i, i % 2 ? "ok" : "error", i));
    expect([s.lastDeliveries.length, s.lastFailures.length, s.lastDeliveries[0]?.at]).toEqual([20, 15, 30]);
  });
});
