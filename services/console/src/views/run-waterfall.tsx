// A session's runs and one run's waterfall: its LLM calls, tool calls, waits and compactions on a time
// axis with durations, tokens and cost. The spans are `deriveRunSpans` of the events folded so far
// (the same derivation as `fleet trace`), so in replay the waterfall is the run as it stood then.
import {
  deriveRunSpans,
  formatDuration,
  formatRowUsage,
  layoutWaterfall,
  type TraceSpan,
  type Waterfall,
} from "@fleet/protocol";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { linkTo } from "../router.js";
import type { LoggedEvent } from "../sse.js";
import { When } from "./when.js";

const TICKS = [0, 0.25, 0.5, 0.75, 1];
/** Runs listed at most (the latest, and the one shown). */
const MAX_LISTED = 100;
/** While the log grows, the spans are derived again at most this often (a derivation reads the whole log). */
const LIVE_DERIVE_MS = 500;

export const runPath = (sessionId: string, runId: string): string =>
  `/sessions/${encodeURIComponent(sessionId)}/runs/${encodeURIComponent(runId)}`;

/**
 * The runs in the first `upTo` events of a session's log (`log` only grows); `runId` (default: the
 * latest) drawn as a waterfall.
 */
export function RunsView({
  sessionId,
  log,
  upTo,
  runId,
}: {
  sessionId: string;
  log: readonly LoggedEvent[];
  upTo: number;
  runId: string | undefined;
}) {
  const derivedUpTo = useThrottled(upTo, upTo === log.length ? LIVE_DERIVE_MS : 0);
  const runs = useMemo(() => {
    const byRun = new Map<string, TraceSpan[]>();
    const events = log.slice(0, derivedUpTo).map((e) => e.event);
    for (const span of deriveRunSpans(events)) {
      const spans = byRun.get(span.runId) ?? [];
      spans.push(span);
      byRun.set(span.runId, spans);
    }
    return [...byRun.entries()].flatMap(([id, spans]) => {
      const waterfall = layoutWaterfall(spans);
      return waterfall ? [{ id, waterfall }] : [];
    });
  }, [log, derivedUpTo]);
  const selected = runId === undefined ? runs.at(-1) : runs.find((r) => r.id === runId);
  const listed = runs.length > MAX_LISTED ? runs.slice(-MAX_LISTED) : runs;
  if (selected && !listed.includes(selected)) listed.unshift(selected);
  if (!runs.length)
    return (
      <div class="muted" data-testid="no-runs">
        no runs {upTo < log.length ? "at this point of the replay" : "yet"}
      </div>
    );
  return (
    <div class="runs" data-testid="runs">
      <table class="run-list" data-testid="run-list">
        <thead>
          <tr>
            <th>run</th>
            <th>started</th>
            <th>duration</th>
            <th>LLM calls</th>
            <th>tool calls</th>
            <th>tokens · cost</th>
          </tr>
        </thead>
        <tbody>
          {listed.map(({ id, waterfall }) => {
            const root = waterfall.rows.find((r) => r.span === waterfall.root);
            return (
              <tr key={id} data-testid="run-row" data-run-id={id} class={id === selected?.id ? "on" : ""}>
                <td>
                  <a href={runPath(sessionId, id)} onClick={linkTo(runPath(sessionId, id))}>
                    {waterfall.root.name}
                  </a>
                  <div class="muted small">{id}</div>
                </td>
                <td>
                  <When ts={waterfall.root.startMs} />
                </td>
                <td>
                  {formatDuration(waterfall.totalMs)}
                  {waterfall.root.open ? " (running)" : ""}
                </td>
                <td>{waterfall.rows.filter((r) => r.span.kind === "client").length}</td>
                <td>{waterfall.rows.filter((r) => r.span.name.startsWith("execute_tool")).length}</td>
                <td>{root ? formatRowUsage(root) : ""}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {runs.length > listed.length && (
        <div class="muted small" data-testid="runs-not-listed">
          {runs.length - listed.length} earlier runs not listed
        </div>
      )}
      {selected ? (
        <RunWaterfall waterfall={selected.waterfall} />
      ) : (
        <div class="notice" data-testid="run-missing">
          run {runId} is not in the log{upTo < log.length ? " at this point of the replay" : ""}
        </div>
      )}
    </div>
  );
}

/** `value`, changing at most once per `ms` (0: at once). */
function useThrottled(value: number, ms: number): number {
  const [shown, setShown] = useState(value);
  const last = useRef(0);
  useEffect(() => {
    if (ms === 0 || value === shown) return;
    const timer = setTimeout(
      () => {
        last.current = performance.now();
        setShown(value);
      },
      Math.max(0, last.current + ms - performance.now()),
    );
    return () => clearTimeout(timer);
  }, [value, shown, ms]);
  if (ms === 0 && value !== shown) {
    last.current = performance.now();
    setShown(value);
    return value;
  }
  return shown;
}

const pct = (x: number) => `${(x * 100).toFixed(3)}%`;

/** One run, as `fleet trace` draws it: a row per span, its bar placed on the run's time axis. */
export function RunWaterfall({ waterfall }: { waterfall: Waterfall }) {
  const { root, rows, totalMs } = waterfall;
  const rootRow = rows.find((r) => r.span === root);
  return (
    <div class="waterfall" data-testid="waterfall" data-run-id={root.runId}>
      <div class="wf-head">
        <b>run {root.runId}</b> · {root.name} · {formatDuration(totalMs)}
        {rootRow && formatRowUsage(rootRow) && ` · ${formatRowUsage(rootRow)}`}
        {root.open && (
          <span class="badge running" data-testid="waterfall-running">
            running
          </span>
        )}
      </div>
      <div class="muted small">
        trace {root.traceId}
        {root.parentSpanId ? ` · parent span ${root.parentSpanId}` : ""}
      </div>
      <table class="wf">
        <thead>
          <tr>
            <th class="wf-name">span</th>
            <th class="wf-bar">
              <svg width="100%" height="16" role="img" aria-label="time axis">
                {TICKS.map((t) => (
                  <text
                    key={t}
                    x={pct(t)}
                    y="12"
                    text-anchor={t === 0 ? "start" : t === 1 ? "end" : "middle"}
                    class="wf-tick"
                  >
                    {formatDuration(t * totalMs)}
                  </text>
                ))}
              </svg>
            </th>
            <th>duration</th>
            <th>tokens · cost</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => {
            const { span } = row;
            const x = row.offsetMs / totalMs;
            const w = Math.max(0.004, row.durationMs / totalMs);
            return (
              <tr
                key={span.spanId}
                data-testid="waterfall-row"
                data-kind={row.kind}
                data-open={String(span.open)}
                data-name={span.name}
              >
                <td class={`wf-name d${Math.min(row.depth, 4)}`} title={span.name}>
                  {span.name}
                </td>
                <td class="wf-bar">
                  <svg
                    width="100%"
                    height="14"
                    role="img"
                    aria-label={`${span.name}: ${formatDuration(row.durationMs)}`}
                  >
                    <title>
                      {`${span.name}\nstarts at +${formatDuration(row.offsetMs)}, lasts ${formatDuration(row.durationMs)}${span.open ? " (still open)" : ""}`}
                    </title>
                    {TICKS.slice(1, -1).map((t) => (
                      <line key={t} x1={pct(t)} x2={pct(t)} y1="0" y2="14" class="wf-grid" />
                    ))}
                    <rect
                      x={pct(Math.min(x, 1 - w))}
                      width={pct(w)}
                      y="2"
                      height="10"
                      rx="2"
                      class={`wf-span ${row.kind}${span.open ? " open" : ""}`}
                    />
                    {row.ttftMs !== undefined && (
                      <line
                        x1={pct((row.offsetMs + row.ttftMs) / totalMs)}
                        x2={pct((row.offsetMs + row.ttftMs) / totalMs)}
                        y1="0"
                        y2="14"
                        class="wf-ttft"
                      />
                    )}
                  </svg>
                </td>
                <td class="wf-num" data-testid="waterfall-duration">
                  {formatDuration(row.durationMs)}
                  {span.open ? " …" : ""}
                </td>
                <td class="wf-num" data-testid="waterfall-usage">
                  {span === root ? "" : formatRowUsage(row)}
                  {row.ttftMs !== undefined ? `  ttft ${formatDuration(row.ttftMs)}` : ""}
                </td>
                <td class="error-text">{row.errorType !== undefined ? `✗ ${row.errorType}` : ""}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
