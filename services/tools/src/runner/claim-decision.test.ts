import { describe, expect, it } from "vitest";
import type { CallState } from "./call-state.js";
import { type ClaimInput, decideClaim, decideDelivery, presenceLive } from "./claim-decision.js";

const NOW = 1_000_000;
const TTL = 5_000;

/** Given the call's state and its owner's presence, when a delivery arrives on runner `me`. */
const given = (state: CallState, over: Partial<ClaimInput> = {}): ClaimInput => ({
  state,
  runnerId: "me",
  toolName: "bash",
  retry: "safe",
  ownerSeenAt: undefined,
  presenceTtlMs: TTL,
  busyRetryMs: 1_000,
  now: NOW,
  ...over,
});

const running = (runnerId: string | undefined, seq = 7): CallState => ({ kind: "running", seq, runnerId });

describe("decideClaim", () => {
  it("nothing written yet: claims at subject sequence 0, whatever the retry policy", () => {
    expect(decideClaim(given({ kind: "none", seq: 0 }))).toEqual({ kind: "claim", expectLastSeq: 0 });
    expect(decideClaim(given({ kind: "none", seq: 0 }, { retry: "never" }))).toEqual({
      kind: "claim",
      expectLastSeq: 0,
    });
  });

  it("a result exists: duplicate, never run again", () => {
    expect(decideClaim(given({ kind: "result", seq: 9 }))).toEqual({ kind: "duplicate" });
    expect(decideClaim(given({ kind: "result", seq: 9 }, { retry: "never", ownerSeenAt: NOW }))).toEqual({
      kind: "duplicate",
    });
  });

  it("another runner runs it and its presence is fresh: busy until its presence would expire", () => {
    expect(decideClaim(given(running("other"), { ownerSeenAt: NOW - 4_800 }))).toEqual({
      kind: "busy",
      owner: "other",
      delayMs: 250,
    });
  });

  it("busy delay is capped by busyRetryMs and floored at 50 ms", () => {
    expect(decideClaim(given(running("other"), { ownerSeenAt: NOW }))).toMatchObject({ kind: "busy", delayMs: 1_000 });
    expect(decideClaim(given(running("other"), { ownerSeenAt: NOW - 4_999 }))).toMatchObject({
      kind: "busy",
      delayMs: 51,
    });
  });

  it("owner's presence older than the TTL (not yet removed by the server): gone", () => {
    expect(decideClaim(given(running("other", 3), { ownerSeenAt: NOW - TTL }))).toEqual({
      kind: "claim",
      expectLastSeq: 3,
      rerunOf: "other",
    });
  });

  it("retry:safe, owner gone (no presence key): re-run, claiming after its last record", () => {
    expect(decideClaim(given(running("other", 4)))).toEqual({ kind: "claim", expectLastSeq: 4, rerunOf: "other" });
  });

  it("retry:never, owner gone: fail with the runner-lost error after its last record", () => {
    expect(decideClaim(given(running("other", 4), { retry: "never" }))).toEqual({
      kind: "fail",
      text: "Tool runner lost while executing bash",
      expectLastSeq: 4,
      previousRunner: "other",
    });
  });

  it("a started record of this runner id that this process does not run (a restart with the same id): gone", () => {
    expect(decideClaim(given(running("me", 2), { ownerSeenAt: NOW }))).toEqual({
      kind: "claim",
      expectLastSeq: 2,
      rerunOf: "me",
    });
    expect(decideClaim(given(running("me", 2), { ownerSeenAt: NOW, retry: "never" }))).toMatchObject({
      kind: "fail",
    });
  });

  it("unreadable last record or a record without a runner id: treated as a gone runner", () => {
    expect(decideClaim(given({ kind: "unknown", seq: 5 }))).toEqual({ kind: "claim", expectLastSeq: 5 });
    expect(decideClaim(given({ kind: "unknown", seq: 5 }, { retry: "never" }))).toMatchObject({
      kind: "fail",
      expectLastSeq: 5,
      previousRunner: undefined,
    });
    expect(decideClaim(given(running(undefined, 6), { ownerSeenAt: NOW }))).toEqual({
      kind: "claim",
      expectLastSeq: 6,
    });
  });
});

describe("presenceLive", () => {
  it("is live strictly within the TTL of the last write", () => {
    expect(presenceLive(undefined, TTL, NOW)).toBe(false);
    expect(presenceLive(NOW - TTL + 1, TTL, NOW)).toBe(true);
    expect(presenceLive(NOW - TTL, TTL, NOW)).toBe(false);
  });
});

describe("decideDelivery", () => {
  const ok = (toolName: string) => ({ ok: true as const, value: { toolName } });
  it("an unreadable request is invalid, with the decoder's reason", () => {
    expect(
      decideDelivery({ decoded: { ok: false, error: "bad json" }, toolName: "bash", runningSeq: undefined, seq: 1 }),
    ).toEqual({ kind: "invalid", error: "bad json" });
  });
  it("a request on another tool's subject is invalid, naming both", () => {
    expect(decideDelivery({ decoded: ok("ls"), toolName: "bash", runningSeq: undefined, seq: 1 })).toEqual({
      kind: "invalid",
      error: 'toolName "ls" was published on the subject of tool "bash"',
    });
  });
  it("a call this runner does not run goes on to the claim", () => {
    expect(decideDelivery({ decoded: ok("bash"), toolName: "bash", runningSeq: undefined, seq: 3 })).toEqual({
      kind: "new",
    });
  });
  it("the message this runner runs, redelivered: keep working on it", () => {
    expect(decideDelivery({ decoded: ok("bash"), toolName: "bash", runningSeq: 3, seq: 3 })).toEqual({
      kind: "keep_working",
    });
  });
  it("another message of a call this runner runs: a duplicate once the run ends", () => {
    expect(decideDelivery({ decoded: ok("bash"), toolName: "bash", runningSeq: 3, seq: 8 })).toEqual({
      kind: "after_running",
    });
  });
});
