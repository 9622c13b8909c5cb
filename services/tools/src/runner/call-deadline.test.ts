import { describe, expect, it } from "vitest";
import { decideDeadline } from "./call-deadline.js";

describe("decideDeadline", () => {
  it("given a request without deadline, then the tool's timeout runs from the start of execution", () => {
    expect(decideDeadline({ requestDeadline: 0, publishedAt: 900, startedAt: 1_000, timeoutMs: 5_000 })).toEqual({
      deadlineAt: 6_000,
      deadlineMs: 5_000,
    });
  });

  it("given a request deadline, then it is the end, and the budget is counted from publication", () => {
    expect(decideDeadline({ requestDeadline: 4_000, publishedAt: 1_000, startedAt: 3_000, timeoutMs: 60_000 })).toEqual(
      { deadlineAt: 4_000, deadlineMs: 3_000 },
    );
  });

  it("given a request deadline before its publication (clock skew), then the budget is 0, never negative", () => {
    expect(decideDeadline({ requestDeadline: 500, publishedAt: 1_000, startedAt: 1_200, timeoutMs: 60_000 })).toEqual({
      deadlineAt: 500,
      deadlineMs: 0,
    });
  });
});
