import { describe, expect, it } from "vitest";
import { buildThinkingConfig, THINKING_BUDGETS } from "./thinking-budget.js";

describe("providers / thinking budget", () => {
  it("disables thinking when the level is off", () => {
    expect(buildThinkingConfig("off", 64_000)).toEqual({ type: "disabled" });
  });

  it("gives each level its budget, increasing with the level", () => {
    expect(THINKING_BUDGETS).toEqual({ minimal: 1_024, low: 4_096, medium: 10_240, high: 24_576, xhigh: 32_768 });
    expect(buildThinkingConfig("minimal", 64_000)).toEqual({ type: "enabled", budget_tokens: 1_024 });
    expect(buildThinkingConfig("low", 64_000)).toEqual({ type: "enabled", budget_tokens: 4_096 });
    expect(buildThinkingConfig("medium", 64_000)).toEqual({ type: "enabled", budget_tokens: 10_240 });
    expect(buildThinkingConfig("high", 64_000)).toEqual({ type: "enabled", budget_tokens: 24_576 });
    expect(buildThinkingConfig("xhigh", 64_000)).toEqual({ type: "enabled", budget_tokens: 32_768 });
  });

  it("keeps the budget below max_tokens, leaving 1024 tokens of visible output", () => {
    expect(buildThinkingConfig("xhigh", 16_000)).toEqual({ type: "enabled", budget_tokens: 14_976 });
    expect(buildThinkingConfig("minimal", 2_048)).toEqual({ type: "enabled", budget_tokens: 1_024 });
  });

  it("disables thinking when max_tokens leaves less than the API minimum budget", () => {
    expect(buildThinkingConfig("high", 2_047)).toEqual({ type: "disabled" });
    expect(buildThinkingConfig("minimal", 1_000)).toEqual({ type: "disabled" });
  });
});
