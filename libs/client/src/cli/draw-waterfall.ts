// A run's spans (derived from the log) as a terminal waterfall: the rows of `layoutWaterfall`, each
// with its bar on a shared time axis.
import { formatDuration, formatRowUsage, layoutWaterfall, type TraceSpan, type WaterfallRow } from "@fleet/protocol";
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
  const waterfall = layoutWaterfall(spans);
  if (!waterfall) return "";
  const { root, totalMs: total, rows } = waterfall;
  const { style } = opts;
  const width = Math.max(60, opts.width ?? 100);
  const barWidth = Math.max(10, width - NAME_WIDTH - 40);
  const col = (ms: number) => Math.min(barWidth - 1, Math.floor((ms / total) * barWidth));
  const rootRow = rows.find((r) => r.span === root) as WaterfallRow;
  const lines = [
    `${style.bold(`run ${root.runId}`)}  ${root.name}  ${formatDuration(rootRow.durationMs)}${usage(rootRow)}` +
      `${root.open ? style.yellow("  (running)") : ""}`,
    style.dim(`trace ${root.traceId}${root.parentSpanId ? `  parent span ${root.parentSpanId}` : ""}`),
    style.dim(
      `${" ".repeat(NAME_WIDTH)}0${" ".repeat(Math.max(1, barWidth - 1 - formatDuration(total).length))}${formatDuration(total)}`,
    ),
  ];
  const paints = { error: style.red, llm: style.cyan, tool: style.green, other: style.dim } as const;
  for (const row of rows) {
    const { span } = row;
    const label = `${"  ".repeat(row.depth)}${span.name}`;
    const name = label.length > NAME_WIDTH - 1 ? `${label.slice(0, NAME_WIDTH - 2)}…` : label;
    const from = col(row.offsetMs);
    const to = Math.min(barWidth, Math.max(from + 1, Math.ceil(((row.offsetMs + row.durationMs) / total) * barWidth)));
    const glyph = span.open ? "▒" : "█";
    const bar = " ".repeat(from) + glyph.repeat(to - from) + " ".repeat(Math.max(0, barWidth - to));
    const error = row.errorType !== undefined ? style.red(`  ✗ ${row.errorType}`) : "";
    const first = row.ttftMs !== undefined ? `  ttft ${formatDuration(row.ttftMs)}` : "";
    const stats = `${formatDuration(row.durationMs).padStart(8)}${span.open ? " …" : ""}${span === root ? "" : usage(row)}${first}${error}`;
    lines.push(`${name.padEnd(NAME_WIDTH)}${paints[row.kind](bar)}${stats}`);
  }
  return `${lines.join("\n")}\n`;
}

function usage(row: WaterfallRow): string {
  const text = formatRowUsage(row);
  return text ? `  ${text}` : "";
}
