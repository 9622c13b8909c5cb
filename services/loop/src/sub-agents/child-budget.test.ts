// A child's share of its parent's budget: the least remainder of the run and session budgets per
// measure, split evenly over the batch's children; nothing left refuses the child.
import { emptySpend } from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import { childBudget, tighterLimits } from "./child-budget.js";

const spent = (totalTokens: number, costUsd = 0) => ({ ...emptySpend(), totalTokens, costUsd });

describe("childBudget", () => {
  it("a parent without run or session limits leaves the child its own", () => {
    expect(childBudget({ budget: {}, run: spent(5), session: spent(5) }, 2)).toEqual({ kind: "unlimited" });
  });

  it("splits the least remainder of each measure over the batch, rounding tokens down", () => {
    const parent = {
      budget: { run: { totalTokens: 1_000 }, session: { totalTokens: 5_000, costUsd: 1 } },
      run: spent(130, 0.1),
      session: spent(4_300, 0.4),
    };
    // total: min(1000 - 130, 5000 - 4300) = 700, / 3; cost: (1 - 0.4) / 3.
    const share = childBudget(parent, 3);
    expect(share.kind).toBe("share");
    if (share.kind !== "share") return;
    expect(share.run.totalTokens).toBe(233);
    expect(share.run.costUsd).toBeCloseTo(0.2, 9);
    expect(Object.keys(share.run).sort()).toEqual(["costUsd", "totalTokens"]);
  });

  it("nothing left in any measure refuses the child", () => {
    const parent = { budget: { session: { outputTokens: 100 } }, run: emptySpend(), session: emptySpend() };
    parent.session.outputTokens = 99;
    expect(childBudget(parent, 2)).toMatchObject({ kind: "spent", reason: expect.stringContaining("outputTokens") });
    expect(childBudget(parent, 1)).toEqual({ kind: "share", run: { outputTokens: 1 } });
  });

  it("tighterLimits keeps the smaller of each limit", () => {
    expect(tighterLimits({ totalTokens: 50, inputTokens: 9 }, { totalTokens: 80, costUsd: 1 })).toEqual({
      totalTokens: 50,
      inputTokens: 9,
      costUsd: 1,
    });
    expect(tighterLimits(undefined, { totalTokens: 80 })).toEqual({ totalTokens: 80 });
  });
});
