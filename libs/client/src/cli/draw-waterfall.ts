// A run's spans (derived from the log) as a terminal waterfall: one row per span on a shared time axis.
import type { TraceSpan } from "@fleet/protocol";
import type { Style } from "./ansi.js";

export interface WaterfallOptions {
  /** Total line width to fit (default 100, at least 60). */
  width?: number;
  style: Style;
}

const NAME_WIDTH = 30;

/**
 * Draws one run: a header (run id, trace id, duration, tokens, cost), then each span with its bar
 * placed on the run's time axis, its duration, and for LLM calls tokens, cost and time to first
 * token. Errors are marked `✗ <error.type>`, spans still open `…`. Pure.
 */
export function drawWaterfall(spans: readonly TraceSpan[], opts: WaterfallOptions): string {
  const root = spans.find((s) => !spans.some((p) => p.spanId === s.parentSpanId)) ?? spans[0];
  if (!root) return "";
  const { style } = opts;
  const width = Math.max(60, opts.width ?? 100);
  const barWidth = Math.max(10, width - NAME_WIDTH - 40);
  const t0 = Math.min(...spans.map((s) => s.startMs));
  const t1 = Math.max(...spans.map((s) => s.endMs));
  const total = Math.max(1, t1 - t0);
  const col = (ms: number) => Math.min(barWidth - 1, Math.floor(((ms - t0) / total) * barWidth));
  const lines = [
    `${style.bold(`run ${root.runId}`)}  ${root.name}  ${duration(root.endMs - root.startMs)}${usage(root)}` +
      `${root.open ? style.yellow("  (running)") : ""}`,
    style.dim(`trace ${root.traceId}${root.parentSpanId ? `  parent span ${root.parentSpanId}` : ""}`),
    style.dim(
      `${" ".repeat(NAME_WIDTH)}0${" ".repeat(Math.max(1, barWidth - 1 - duration(total).length))}${duration(total)}`,
    ),
  ];
  const depthOf = (s: TraceSpan): number => {
    const parent = spans.find((p) => p.spanId === s.parentSpanId);
    return parent ? 1 + depthOf(parent) : 0;
  };
  const ordered = [...spans].sort((a, b) => a.startMs - b.startMs || depthOf(a) - depthOf(b));
  for (const span of ordered) {
    const label = `${"  ".repeat(depthOf(span))}${span.name}`;
    const name = label.length > NAME_WIDTH - 1 ? `${label.slice(0, NAME_WIDTH - 2)}…` : label;
    const from = col(span.startMs);
    const to = Math.min(barWidth, Math.max(from + 1, Math.ceil(((span.endMs - t0) / total) * barWidth)));
    const glyph = span.open ? "▒" : "█";
    const bar = " ".repeat(from) + glyph.repeat(to - from) + " ".repeat(Math.max(0, barWidth - to));
    const failed = span.status.code === "error";
    const paint = failed
      ? style.red
      : span.kind === "client"
        ? style.cyan
        : span.name.startsWith("execute_tool")
          ? style.green
          : style.dim;
    const error = failed ? style.red(`  ✗ ${String(span.attributes["error.type"] ?? "error")}`) : "";
    const ttft = span.attributes["fleet.time_to_first_token"];
    const first = typeof ttft === "number" && span.kind === "client" ? `  ttft ${duration(ttft * 1000)}` : "";
    const stats = `${duration(span.endMs - span.startMs).padStart(8)}${span.open ? " …" : ""}${span === root ? "" : usage(span)}${first}${error}`;
    lines.push(`${name.padEnd(NAME_WIDTH)}${paint(bar)}${stats}`);
  }
  return `${lines.join("\n")}\n`;
}

function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(2)} s`;
  return `${Math.floor(ms / 60_000)} m ${Math.round((ms % 60_000) / 1000)} s`;
}

function usage(span: TraceSpan): string {
  const input = span.attributes["gen_ai.usage.input_tokens"];
  const output = span.attributes["gen_ai.usage.output_tokens"];
  const cost = span.attributes["fleet.cost.usd"];
  const parts: string[] = [];
  if (typeof input === "number" && typeof output === "number") parts.push(`${input} in / ${output} out`);
  if (typeof cost === "number" && cost > 0) parts.push(`$${cost.toFixed(4)}`);
  return parts.length ? `  ${parts.join("  ")}` : "";
}
