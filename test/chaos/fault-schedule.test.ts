import { describe, expect, it } from "vitest";
import { buildFaultSchedule, FAULT_KINDS } from "./fault-schedule.js";
import { parseOptions } from "./options.js";
import { formatReport, percentile } from "./report.js";

const settings = { durationMs: 120_000, kinds: FAULT_KINDS, leaseTtlMs: 3_000, natsNodes: 1 };

describe("chaos / fault schedule", () => {
  it("is a function of the seed: the same seed repeats the run, another seed differs", () => {
    const a = buildFaultSchedule({ seed: 1, ...settings });
    expect(buildFaultSchedule({ seed: 1, ...settings })).toEqual(a);
    expect(buildFaultSchedule({ seed: 2, ...settings })).not.toEqual(a);
  });
  it("keeps faults between warm-up and the quiet end, with holds in their ranges, about 20 in 120 s", () => {
    const faults = buildFaultSchedule({ seed: 3, ...settings });
    expect(faults.length).toBeGreaterThanOrEqual(14);
    expect(faults.length).toBeLessThanOrEqual(24);
    for (const f of faults) {
      expect(f.atMs).toBeGreaterThanOrEqual(5_000);
      expect(f.atMs).toBeLessThan(115_000);
      if (f.kind.startsWith("kill_") || f.kind === "redis_restart") expect(f.holdMs).toBeLessThanOrEqual(3_000);
      if (f.kind === "pause_nats") expect(f.holdMs).toBeGreaterThanOrEqual(1_000);
      if (f.kind === "pause_loop") expect(f.holdMs).toBeGreaterThan(3_000);
      // Shorter than the lease (kept, appends retried) or well past it (lost, taken again): 1–2.5 s or 5–20 s.
      if (f.kind === "storage_full") expect(f.holdMs < 2_500 || (f.holdMs >= 5_000 && f.holdMs <= 20_000)).toBe(true);
    }
  });
  it("draws only the kinds asked for", () => {
    const faults = buildFaultSchedule({ seed: 4, ...settings, kinds: ["kill_loop", "pause_loop"] });
    expect(new Set(faults.map((f) => f.kind))).toEqual(new Set(["kill_loop", "pause_loop"]));
  });
});

describe("chaos / options and report", () => {
  it("parses options and names a bad one", () => {
    expect(parseOptions(["--seed", "5", "--duration", "30", "--cluster", "--faults", "kill_loop"], 9)).toEqual({
      seed: 5,
      durationMs: 30_000,
      sessions: 24,
      cluster: true,
      groups: 3,
      kinds: ["kill_loop"],
    });
    expect(parseOptions(["--cluster", "--groups", "1"], 9)).toMatchObject({ cluster: true, groups: 1 });
    expect(parseOptions([], 9)).toMatchObject({ seed: 9, cluster: false, groups: 1 });
    expect(parseOptions(["--groups", "17"], 9)).toEqual({
      error: "--groups needs an integer from 1 to 16 (the partitions), got 17",
    });
    expect(parseOptions(["--faults", "kill_everything"], 9)).toEqual({
      error: "--faults: unknown kind(s) kill_everything",
    });
  });
  it("ends the report with the summary line", () => {
    const lines = formatReport({
      seed: 1,
      durationMs: 60_000,
      sessions: 2,
      cluster: false,
      applied: [{ fault: { atMs: 5_000, kind: "kill_loop", target: 0, holdMs: 10 }, startedMs: 5_000 }],
      prompts: [
        { sessionId: "s", commandId: "c", sends: 2, stored: true, outcome: "accepted", done: true, probe: false },
      ],
      latencies: [100, 300],
      failovers: [{ role: "loop", cause: "kill", ms: 2_500 }],
      runsResumed: 1,
      runnerSettle: { settledMs: [], unsettled: 0 },
      sse: { clients: 2, reconnects: 3 },
      toolErrors: new Map(),
      violations: [{ invariant: "log", sessionId: "s", kind: "duplicate_event_id", detail: "x" }],
    });
    expect(lines).toContain("failover loop (kill/stop -> partitions re-leased): n 1, p50 2500 ms, max 2500 ms");
    expect(lines).toContain("  2 log shape: 1 violations (duplicate_event_id)");
    expect(lines).toContain("SSE clients: 2, reconnected 3 times (Last-Event-ID, next gateway)");
    expect(lines.at(-1)).toBe("chaos: 1 faults, 2 sessions, 1 prompts done, 1 violations");
    expect(percentile([5, 1, 3, 2, 4], 50)).toBe(3);
    expect(percentile([5, 1, 3, 2, 4], 99)).toBe(5);
  });
});
