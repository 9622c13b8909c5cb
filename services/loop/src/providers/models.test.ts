import { describe, expect, it } from "vitest";
import {
  computeCost,
  DEFAULT_CONTEXT_WINDOW,
  DEFAULT_MAX_OUTPUT_TOKENS,
  getModelInfo,
  knownModelIds,
} from "./models.js";

describe("providers / models", () => {
  it("knows the current Claude models with their limits and prices", () => {
    expect(getModelInfo("claude-sonnet-5")).toEqual({
      id: "claude-sonnet-5",
      known: true,
      contextWindow: 1_000_000,
      maxOutputTokens: 64_000,
      price: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
    });
    expect(getModelInfo("claude-opus-4-1-20250805")).toEqual({
      id: "claude-opus-4-1-20250805",
      known: true,
      contextWindow: 200_000,
      maxOutputTokens: 32_000,
      price: { input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 },
    });
    expect(getModelInfo("claude-haiku-4-5").price).toEqual({ input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25 });
    expect(knownModelIds()).toEqual(
      expect.arrayContaining([
        "claude-opus-5",
        "claude-sonnet-5",
        "claude-haiku-4-5",
        "claude-opus-4-1",
        "claude-sonnet-4-5",
      ]),
    );
  });

  it("prices every cache read at 0.1x and every cache write at 1.25x the input price", () => {
    for (const id of knownModelIds()) {
      const { price } = getModelInfo(id);
      expect(price.cacheRead).toBeCloseTo(price.input * 0.1, 10);
      expect(price.cacheWrite).toBeCloseTo(price.input * 1.25, 10);
    }
  });

  it("gives an unknown model zero prices and the default limits", () => {
    expect(getModelInfo("my-proxy-model")).toEqual({
      id: "my-proxy-model",
      known: false,
      contextWindow: DEFAULT_CONTEXT_WINDOW,
      maxOutputTokens: DEFAULT_MAX_OUTPUT_TOKENS,
      price: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    });
  });

  it("computes the cost per million tokens, part by part", () => {
    const cost = computeCost(
      { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
      { input: 1_000_000, output: 200_000, cacheRead: 500_000, cacheWrite: 100_000 },
    );
    expect(cost.input).toBeCloseTo(3, 12);
    expect(cost.output).toBeCloseTo(3, 12);
    expect(cost.cacheRead).toBeCloseTo(0.15, 12);
    expect(cost.cacheWrite).toBeCloseTo(0.375, 12);
    expect(cost.total).toBeCloseTo(6.525, 12);
  });
});
