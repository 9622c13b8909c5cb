import { describe, expect, it } from "vitest";
import { traceSpan as span } from "../../fixtures/builders.js";
import { formatDuration, formatRowUsage, layoutWaterfall } from "./waterfall.js";

describe("trace / waterfall layout", () => {
  it("orders spans by start, parents first, with offsets, depth, kind, usage, ttft and errors", () => {
    const root = span({
      spanId: "root000000000000",
      parentSpanId: null,
      name: "invoke_agent fleet",
      startMs: 10_000,
      endMs: 12_000,
      open: true,
      attributes: { "gen_ai.usage.input_tokens": 1500, "gen_ai.usage.output_tokens": 70, "fleet.cost.usd": 0 },
    });
    const spans = [
      span({
        spanId: "tool000000000001",
        name: "execute_tool bash",
        startMs: 11_000,
        endMs: 11_500,
        status: { code: "error" },
        attributes: { "error.type": "tool_error" },
      }),
      span({
        spanId: "chat000000000001",
        name: "chat m",
        kind: "client",
        startMs: 10_000,
        endMs: 11_000,
        attributes: {
          "gen_ai.usage.input_tokens": 1000,
          "gen_ai.usage.output_tokens": 50,
          "fleet.cost.usd": 0.01,
          "fleet.time_to_first_token": 0.25,
        },
      }),
      root,
    ];
    const w = layoutWaterfall(spans);
    expect(w?.root).toBe(root);
    expect([w?.startMs, w?.totalMs]).toEqual([10_000, 2_000]);
    expect(
      w?.rows.map((r) => [
        r.span.name,
        r.depth,
        r.kind,
        r.offsetMs,
        r.durationMs,
        formatRowUsage(r),
        r.ttftMs,
        r.errorType,
      ]),
    ).toEqual([
      ["invoke_agent fleet", 0, "other", 0, 2_000, "1500 in / 70 out", undefined, undefined],
      ["chat m", 1, "llm", 0, 1_000, "1000 in / 50 out  $0.0100", 250, undefined],
      ["execute_tool bash", 1, "error", 1_000, 500, "", undefined, "tool_error"],
    ]);
    expect(layoutWaterfall([])).toBeUndefined();
  });

  it("formats durations as people read them", () => {
    expect([formatDuration(850.4), formatDuration(2_345), formatDuration(185_000)]).toEqual([
      "850 ms",
      "2.35 s",
      "3 m 5 s",
    ]);
  });
});
