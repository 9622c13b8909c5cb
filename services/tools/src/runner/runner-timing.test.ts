import { describe, expect, it } from "vitest";
import {
  consumerAckWaitMs,
  DEFAULT_PRESENCE_TTL_MS,
  isAckWaitDrift,
  presenceHeartbeatMs,
  presenceTtlOf,
  workingIntervalMs,
} from "./runner-timing.js";

const SECOND_NS = 1_000_000_000;

describe("runner timing", () => {
  it("given a leases bucket with a TTL, then presence lives that long and is rewritten every third of it", () => {
    expect(presenceTtlOf(6_000)).toBe(6_000);
    expect(presenceHeartbeatMs(6_000)).toBe(2_000);
  });

  it("given a very short TTL, then the heartbeat is not faster than every 100 ms", () => {
    expect(presenceHeartbeatMs(150)).toBe(100);
  });

  it("given a bucket without TTL, then a 15 s TTL decides liveness and presence is rewritten every 5 s", () => {
    expect(presenceTtlOf(undefined)).toBe(DEFAULT_PRESENCE_TTL_MS);
    expect(presenceTtlOf(0)).toBe(15_000);
    expect(presenceHeartbeatMs(undefined)).toBe(5_000);
    expect(presenceHeartbeatMs(0)).toBe(5_000);
  });

  it("given no configured ack_wait, then the consumers' ack_wait is the presence TTL", () => {
    expect(consumerAckWaitMs(undefined, 6_000)).toBe(6_000);
    expect(consumerAckWaitMs(2_000, 6_000)).toBe(2_000);
  });

  it("given a drift report, then only an ack_wait difference makes the runner apply its own", () => {
    expect(isAckWaitDrift(["tool-bash: ack_wait is 30000000000, expected 6000000000"])).toBe(true);
    expect(isAckWaitDrift(["tool-bash: max_deliver is -1, expected 5"])).toBe(false);
    expect(isAckWaitDrift([])).toBe(false);
  });

  it("given the consumers' ack_waits, then calls are marked in progress every third of the shortest", () => {
    expect(workingIntervalMs([6 * SECOND_NS, 3 * SECOND_NS])).toBe(1_000);
  });

  it("given an unset ack_wait, then the server's 30 s counts; and the interval stays within 100 ms .. 10 s", () => {
    expect(workingIntervalMs([undefined])).toBe(10_000);
    expect(workingIntervalMs([60 * SECOND_NS])).toBe(10_000);
    expect(workingIntervalMs([SECOND_NS / 10])).toBe(100);
    expect(workingIntervalMs([])).toBe(10_000);
  });
});
