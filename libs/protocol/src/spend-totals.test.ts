import { describe, expect, it } from "vitest";
import { budgetViolation, emptySpend, type Spend, type TenantSpendRecord } from "./budget.js";
import { type PartitionDayTotal, planCount, type SpendIntent, sumTotals } from "./spend-totals.js";

const DAY = "2026-12-04";
const out = (outputTokens: number, costUsd = outputTokens / 1000): Spend => ({
  inputTokens: 10,
  outputTokens,
  totalTokens: 10 + outputTokens,
  costUsd,
});
const total = (spend: Spend, pending: PartitionDayTotal["pending"] = []): PartitionDayTotal => ({
  day: DAY,
  partition: 3,
  ...spend,
  pending,
});
const record = (sessionId: string, events: number, spend: Spend): TenantSpendRecord => ({
  sessionId,
  day: DAY,
  events,
  ...spend,
});
const count = (sessionId: string, events: number, spend: Spend): SpendIntent => ({
  sessionId,
  events,
  spend,
  mode: "count",
});
const records = (...rs: Array<[string, TenantSpendRecord | undefined]>) => new Map(rs);

describe("spend totals / given a partition's day total, when a run spends, then", () => {
  it("the first spend of the day creates the total, with the session pending until its record is written", () => {
    const plan = planCount(DAY, 3, undefined, records(["s-1", undefined]), [count("s-1", 7, out(50))]);
    expect(plan.total).toEqual(total(out(50), [{ sessionId: "s-1", events: 7, ...out(50) }]));
    expect(plan.records).toEqual([record("s-1", 7, out(50))]);
    expect(plan.counted.get("s-1")).toEqual(out(50));
  });

  it("a later spend adds only what the fold has over the session's record", () => {
    const current = total(out(130));
    const plan = planCount(DAY, 3, current, records(["s-1", record("s-1", 7, out(50))]), [count("s-1", 12, out(80))]);
    expect(plan.total).toMatchObject({ outputTokens: 160, inputTokens: 10, totalTokens: 170 });
    expect(plan.total?.costUsd).toBeCloseTo(0.16, 10);
    expect(plan.total?.pending).toEqual([{ sessionId: "s-1", events: 12, ...out(80) }]);
  });

  it("a retry after a crash between the total and the record adds nothing and writes the record", () => {
    // The total was written (pending entry at 12 events), the record was not: it still says 7.
    const current = total(out(160), [{ sessionId: "s-1", events: 12, ...out(80) }]);
    const plan = planCount(DAY, 3, current, records(["s-1", record("s-1", 7, out(50))]), [count("s-1", 12, out(80))]);
    expect(plan.total).toBeNull();
    expect(plan.records).toEqual([record("s-1", 12, out(80))]);
    expect(plan.counted.get("s-1")).toEqual(out(80));
  });

  it("the next owner's fold, ahead of a pending entry, adds what it has over the entry, not over the stale record", () => {
    const current = total(out(160), [{ sessionId: "s-1", events: 12, ...out(80) }]);
    const plan = planCount(DAY, 3, current, records(["s-1", record("s-1", 7, out(50))]), [count("s-1", 15, out(100))]);
    expect(plan.total).toMatchObject({ outputTokens: 180 });
    expect(plan.total?.pending).toEqual([{ sessionId: "s-1", events: 15, ...out(100) }]);
  });

  it("a record written since settles its pending entry; a newer entry of another session stays", () => {
    const current = total(out(160), [
      { sessionId: "s-1", events: 12, ...out(80) },
      { sessionId: "s-2", events: 4, ...out(30) },
    ]);
    const settled = planCount(DAY, 3, current, new Map(), [], [{ sessionId: "s-1", events: 12 }]);
    expect(settled.total).toEqual(total(out(160), [{ sessionId: "s-2", events: 4, ...out(30) }]));
    // A settle of an older count leaves a newer entry of the session alone.
    expect(planCount(DAY, 3, current, new Map(), [], [{ sessionId: "s-2", events: 3 }]).total).toBeNull();
  });

  it("a deposed owner that is behind changes nothing", () => {
    const current = total(out(160));
    const plan = planCount(DAY, 3, current, records(["s-1", record("s-1", 12, out(80))]), [count("s-1", 9, out(60))]);
    expect(plan).toMatchObject({ total: null, records: [] });
  });

  it("never takes spend away: more events with less of a field add nothing of it", () => {
    const current = total(out(80));
    const plan = planCount(DAY, 3, current, records(["s-1", record("s-1", 12, out(80))]), [
      count("s-1", 13, { ...out(80), costUsd: 0 }),
    ]);
    expect(plan.total).toMatchObject({ outputTokens: 80, costUsd: out(80).costUsd });
  });

  it("several sessions in one update: each adds its own difference", () => {
    const plan = planCount(DAY, 3, total(out(50)), records(["s-1", record("s-1", 7, out(50))], ["s-2", undefined]), [
      count("s-1", 9, out(70)),
      count("s-2", 3, out(25)),
    ]);
    expect(plan.total).toMatchObject({ outputTokens: 95, inputTokens: 20, totalTokens: 115 });
    expect(plan.records.map((r) => r.sessionId)).toEqual(["s-1", "s-2"]);
  });
});

describe("spend totals / a deletion and a restore", () => {
  it("a deletion catches the total up to the tombstone's spend, for a session the total counts", () => {
    const intent: SpendIntent = { sessionId: "s-1", events: 20, spend: out(90), mode: "catch_up" };
    const plan = planCount(DAY, 3, total(out(130)), records(["s-1", record("s-1", 12, out(80))]), [intent]);
    expect(plan.total).toMatchObject({ outputTokens: 140 });
  });

  it("a resumed deletion, whose records are gone, counts nothing again", () => {
    const intent: SpendIntent = { sessionId: "s-1", events: 20, spend: out(90), mode: "catch_up" };
    const plan = planCount(DAY, 3, total(out(140)), records(["s-1", undefined]), [intent]);
    expect(plan).toMatchObject({ total: null, records: [] });
    expect(plan.counted.get("s-1")).toBeUndefined();
  });

  it("a restore writes the records back and adds nothing its deletion left counted", () => {
    const intent: SpendIntent = { sessionId: "s-1", events: 24, spend: out(90), mode: "restore", baseline: out(90) };
    const plan = planCount(DAY, 3, total(out(140)), records(["s-1", undefined]), [intent]);
    expect(plan.total).toEqual(total(out(140), [{ sessionId: "s-1", events: 24, ...out(90) }]));
    expect(plan.records).toEqual([record("s-1", 24, out(90))]);
  });

  it("a new session of a deleted session's id counts from nothing", () => {
    const plan = planCount(DAY, 3, total(out(140)), records(["s-1", undefined]), [count("s-1", 4, out(5))]);
    expect(plan.total).toMatchObject({ outputTokens: 145 });
  });
});

describe("spend totals / the tenant's limit", () => {
  it("the day's spend is the sum of the partitions' totals: a run is refused once it reaches the limit", () => {
    const totals = [total(out(300)), { ...total(out(200)), partition: 7 }];
    const spent = sumTotals(totals);
    expect(spent).toMatchObject({ outputTokens: 500, inputTokens: 20 });
    expect(budgetViolation("tenant", { outputTokens: 501 }, spent)).toBeUndefined();
    expect(budgetViolation("tenant", { outputTokens: 500 }, spent)).toEqual({
      scope: "tenant",
      limit: "outputTokens",
      spent: 500,
      max: 500,
    });
    expect(sumTotals([])).toEqual(emptySpend());
  });
});
