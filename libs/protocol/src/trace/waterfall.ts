// A run's spans laid out as a waterfall (pure): one row per span on the run's time axis. Drawn by
// `fleet trace` in the terminal and by the web console, so both show the same rows.
import type { TraceSpan } from "./run-spans.js";

/** How a row is drawn: an LLM call, a tool call, an error, or anything else (run, waits, compaction). */
export type WaterfallRowKind = "llm" | "tool" | "error" | "other";

/** One span of the waterfall. Offsets are from the run's first span start, in ms. */
export interface WaterfallRow {
  span: TraceSpan;
  /** 0 for the run's root, 1 for its children, and so on. */
  depth: number;
  kind: WaterfallRowKind;
  offsetMs: number;
  durationMs: number;
  /** `gen_ai.usage.*_tokens` when the span has both. */
  tokens?: { input: number; output: number };
  /** `fleet.cost.usd` when above 0. */
  costUsd?: number;
  /** Time to first token of an LLM call, in ms. */
  ttftMs?: number;
  /** `error.type` of a failed span. */
  errorType?: string;
}

export interface Waterfall {
  /** The run's root span (the one whose parent is not among the spans). */
  root: TraceSpan;
  /** Epoch ms of the earliest span start: offset 0. */
  startMs: number;
  /** From the earliest start to the latest end (at least 1 ms). */
  totalMs: number;
  /** Ordered by start, parents before their children at the same start. */
  rows: WaterfallRow[];
}

/** The waterfall of one run's spans (`deriveRunSpans` filtered to a run); `undefined` for none. */
export function layoutWaterfall(spans: readonly TraceSpan[]): Waterfall | undefined {
  const root = spans.find((s) => !spans.some((p) => p.spanId === s.parentSpanId)) ?? spans[0];
  if (!root) return undefined;
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const depthOf = (s: TraceSpan): number => {
    let depth = 0;
    const seen = new Set<string>([s.spanId]);
    for (let p = byId.get(s.parentSpanId ?? ""); p && !seen.has(p.spanId); p = byId.get(p.parentSpanId ?? "")) {
      seen.add(p.spanId);
      depth++;
    }
    return depth;
  };
  const startMs = Math.min(...spans.map((s) => s.startMs));
  const endMs = Math.max(...spans.map((s) => s.endMs));
  const rows = spans
    .map((span) => rowOf(span, depthOf(span), startMs))
    .sort((a, b) => a.offsetMs - b.offsetMs || a.depth - b.depth);
  return { root, startMs, totalMs: Math.max(1, endMs - startMs), rows };
}

function rowOf(span: TraceSpan, depth: number, startMs: number): WaterfallRow {
  const a = span.attributes;
  const failed = span.status.code === "error";
  const kind: WaterfallRowKind = failed
    ? "error"
    : span.kind === "client"
      ? "llm"
      : span.name.startsWith("execute_tool")
        ? "tool"
        : "other";
  const row: WaterfallRow = {
    span,
    depth,
    kind,
    offsetMs: span.startMs - startMs,
    durationMs: span.endMs - span.startMs,
  };
  const input = a["gen_ai.usage.input_tokens"];
  const output = a["gen_ai.usage.output_tokens"];
  if (typeof input === "number" && typeof output === "number") row.tokens = { input, output };
  const cost = a["fleet.cost.usd"];
  if (typeof cost === "number" && cost > 0) row.costUsd = cost;
  const ttft = a["fleet.time_to_first_token"];
  if (typeof ttft === "number" && span.kind === "client") row.ttftMs = ttft * 1000;
  if (failed) row.errorType = String(a["error.type"] ?? "error");
  return row;
}

/** `850 ms`, `2.35 s`, `3 m 5 s`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(2)} s`;
  return `${Math.floor(ms / 60_000)} m ${Math.round((ms % 60_000) / 1000)} s`;
}

/** `1500 in / 70 out  $0.0123` (tokens and cost the row has), or "". */
export function formatRowUsage(row: Pick<WaterfallRow, "tokens" | "costUsd">): string {
  const parts: string[] = [];
  if (row.tokens) parts.push(`${row.tokens.input} in / ${row.tokens.output} out`);
  if (row.costUsd !== undefined) parts.push(`$${row.costUsd.toFixed(4)}`);
  return parts.join("  ");
}
