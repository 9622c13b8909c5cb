import type { TraceSpan } from "@fleet/protocol";
import { traceSpan as span } from "@fleet/protocol/testing";
import { describe, expect, it } from "vitest";
import { createStyle } from "./ansi.js";
import { drawWaterfall } from "./draw-waterfall.js";

const spans: TraceSpan[] = [
  span({
    spanId: "root000000000000",
    parentSpanId: null,
    name: "invoke_agent fleet",
    startMs: 0,
    endMs: 2_000,
    attributes: { "gen_ai.usage.input_tokens": 1500, "gen_ai.usage.output_tokens": 70, "fleet.cost.usd": 0.0123 },
  }),
  span({
    spanId: "chat000000000001",
    name: "chat claude-sonnet-4-5",
    kind: "client",
    startMs: 0,
    endMs: 1_000,
    attributes: {
      "gen_ai.usage.input_tokens": 1000,
      "gen_ai.usage.output_tokens": 50,
      "fleet.cost.usd": 0.01,
      "fleet.time_to_first_token": 0.25,
    },
  }),
  span({
    spanId: "tool000000000001",
    name: "execute_tool bash",
    startMs: 1_000,
    endMs: 1_500,
    status: { code: "error" },
    attributes: { "error.type": "tool_error" },
  }),
];

describe("cli / trace waterfall", () => {
  it("places each span on the run's time axis with its duration, tokens, cost and errors", () => {
    const out = drawWaterfall(spans, { style: createStyle(false), width: 100 });
    const lines = out.trimEnd().split("\n");
    expect(lines[0]).toBe("run run-1  invoke_agent fleet  2.00 s  1500 in / 70 out  $0.0123");
    expect(lines[1]).toBe("trace 4bf92f3577b34da6a3ce929d0e0e4736");
    const bar = (line: string) => line.slice(30, 60);
    const [root, chat, tool] = lines.slice(3);
    expect(bar(root!)).toBe("█".repeat(30));
    expect(bar(chat!)).toBe(`${"█".repeat(15)}${" ".repeat(15)}`);
    expect(bar(tool!)).toBe(`${" ".repeat(15)}${"█".repeat(8)}${" ".repeat(7)}`);
    expect(chat).toContain("1.00 s  1000 in / 50 out  $0.0100  ttft 250 ms");
    expect(tool).toContain("500 ms");
    expect(tool).toContain("✗ tool_error");
    expect(lines[3]!.startsWith("invoke_agent fleet")).toBe(true);
    expect(lines[4]!.startsWith("  chat claude-sonnet-4-5")).toBe(true);
  });

  it("marks a run still going", () => {
    const open = spans.map((s, i) => (i === 0 ? { ...s, open: true } : s));
    expect(drawWaterfall(open, { style: createStyle(false) }).split("\n")[0]).toContain("(running)");
  });
});
