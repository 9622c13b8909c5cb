import { describe, expect, it } from "vitest";
import type { CallId } from "./call-records.js";
import type { CallState } from "./call-state.js";
import { type ClaimCallDeps, claimCall } from "./claim-call.js";

const NOW = 1_000_000;
const CALL: CallId = { sessionId: "s-1", toolCallId: "t-1" };
const conflict = () => Object.assign(new Error("wrong last sequence: 4"), { code: 10071 });
const quietLog = { info() {}, warn() {} };

/**
 * Given the call's real state on its result subject (what a read returns, and what makes a write
 * that expects another sequence conflict) and the owners' presence; writes are recorded.
 */
function given(state: CallState, seen: Record<string, number> = {}, retry: "safe" | "never" = "safe") {
  const writes: string[] = [];
  let reads = 0;
  const write = (what: string, expectLastSeq: number) => {
    if (expectLastSeq !== state.seq) return Promise.reject(conflict());
    writes.push(`${what}@${expectLastSeq}`);
    return Promise.resolve();
  };
  const deps: ClaimCallDeps = {
    runnerId: "me",
    readState: async () => {
      reads++;
      return state;
    },
    seenAt: async (runnerId) => seen[runnerId],
    presenceTtlMs: 5_000,
    busyRetryMs: 1_000,
    publisher: {
      started: (_call, seq) => write("started", seq),
      failed: (_call, text, seq) => write(`failed(${text})`, seq),
    },
    now: () => NOW,
  };
  const when = async () => ({
    decision: await claimCall(deps, CALL, { name: "bash", retry }, quietLog),
    writes,
    reads,
  });
  return { when };
}

describe("claimCall", () => {
  it("given nothing written yet, then it claims at sequence 0 without reading the state", async () => {
    expect(await given({ kind: "none", seq: 0 }).when()).toEqual({
      decision: { kind: "claim", expectLastSeq: 0 },
      writes: ["started@0"],
      reads: 0,
    });
  });

  it("given a result, then the optimistic claim conflicts, the state is read, and nothing is written", async () => {
    expect(await given({ kind: "result", seq: 9 }).when()).toEqual({
      decision: { kind: "duplicate" },
      writes: [],
      reads: 1,
    });
  });

  it("given a run by a live runner, then busy until its presence would expire, nothing written", async () => {
    const { decision, writes } = await given(
      { kind: "running", seq: 4, runnerId: "other" },
      { other: NOW - 4_800 },
    ).when();
    expect(decision).toEqual({ kind: "busy", owner: "other", delayMs: 250 });
    expect(writes).toEqual([]);
  });

  it("given a retry:safe run by a gone runner, then it claims after that runner's last record", async () => {
    expect(await given({ kind: "running", seq: 4, runnerId: "other" }).when()).toMatchObject({
      decision: { kind: "claim", expectLastSeq: 4, rerunOf: "other" },
      writes: ["started@4"],
    });
  });

  it("given a retry:never run by a gone runner, then the runner-lost error is written after its last record", async () => {
    expect(await given({ kind: "running", seq: 4, runnerId: "other" }, {}, "never").when()).toMatchObject({
      decision: { kind: "fail", expectLastSeq: 4, previousRunner: "other" },
      writes: ["failed(Tool runner lost while executing bash)@4"],
    });
  });

  it("given a subject that keeps changing under it, then it gives up after 3 reads with the conflict", async () => {
    let seq = 1;
    const deps: ClaimCallDeps = {
      runnerId: "me",
      readState: async () => ({ kind: "running", seq: seq++, runnerId: "other" }),
      seenAt: async () => undefined,
      presenceTtlMs: 5_000,
      busyRetryMs: 1_000,
      publisher: { started: () => Promise.reject(conflict()), failed: () => Promise.reject(conflict()) },
      now: () => NOW,
    };
    await expect(claimCall(deps, CALL, { name: "bash", retry: "safe" }, quietLog)).rejects.toMatchObject({
      code: 10071,
    });
    expect(seq).toBe(4);
  });

  it("given another error than a conflict, then it is thrown at once", async () => {
    const deps: ClaimCallDeps = {
      runnerId: "me",
      readState: async () => ({ kind: "none", seq: 0 }),
      seenAt: async () => undefined,
      presenceTtlMs: 5_000,
      busyRetryMs: 1_000,
      publisher: { started: () => Promise.reject(new Error("timeout")), failed: async () => {} },
      now: () => NOW,
    };
    await expect(claimCall(deps, CALL, { name: "bash", retry: "safe" }, quietLog)).rejects.toThrow("timeout");
  });
});
