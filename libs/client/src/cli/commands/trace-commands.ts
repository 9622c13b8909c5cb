// `fleet trace <session>` (a run's waterfall) and `fleet trace export <session>` (its spans over OTLP/HTTP).
import type { TraceSpan } from "@fleet/protocol";
import { createOtlpSpanExporter, isOtlpTraceExportConfigured } from "@fleet/runtime";
import { CliError, EXIT } from "../cli-error.js";
import { withClient } from "../connect.js";
import { drawWaterfall } from "../draw-waterfall.js";
import { type CliIo, outStyle } from "../io.js";

export interface TraceOptions {
  run?: string;
  json?: boolean;
}

/** Prints one run (`--run`, default the latest) as a waterfall, or its spans as JSON. */
export async function traceCommand(io: CliIo, sessionId: string, opts: TraceOptions): Promise<number> {
  return withClient(io, async (client) => {
    const spans = await client.trace(sessionId, opts.run !== undefined ? { runId: opts.run } : {});
    const runIds = [...new Set(spans.map((s) => s.runId))];
    const runId = opts.run ?? runIds.at(-1);
    if (runId === undefined || !runIds.includes(runId)) throw new CliError(noRun(sessionId, opts.run));
    const run = spans.filter((s) => s.runId === runId);
    if (opts.json) {
      io.stdout.write(`${JSON.stringify(run)}\n`);
      return 0;
    }
    io.stdout.write(drawWaterfall(run, { style: outStyle(io), width: io.stdout.columns ?? 100 }));
    if (runIds.length > 1 && opts.run === undefined) {
      io.stdout.write(
        `(${runIds.length - 1} earlier run(s); --run <id> shows one: ${runIds.slice(0, -1).join(", ")})\n`,
      );
    }
    return 0;
  });
}

/**
 * Sends the closed spans of the session's runs (`--run`: one) to the OTLP/HTTP endpoint of the
 * standard variables. Spans of a run still going are left out (and counted).
 */
export async function traceExportCommand(io: CliIo, sessionId: string, opts: { run?: string }): Promise<number> {
  if (!isOtlpTraceExportConfigured(io.env)) {
    throw new CliError(
      "no OTLP endpoint: set OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)",
      EXIT.usage,
    );
  }
  return withClient(io, async (client) => {
    const spans = await client.trace(sessionId, opts.run !== undefined ? { runId: opts.run } : {});
    if (spans.length === 0) throw new CliError(noRun(sessionId, opts.run));
    const closed = spans.filter((s) => !s.open);
    const exporter = await createOtlpSpanExporter({ defaultServiceName: "fleet" });
    try {
      const out = await exporter.export(closed);
      if (!out.ok) throw new CliError(`export failed: ${out.error}`);
    } finally {
      await exporter.shutdown();
    }
    const runs = summarize(closed);
    io.stdout.write(
      `sent ${closed.length} span(s) of ${runs.length} run(s)${spans.length > closed.length ? ` (${spans.length - closed.length} still open, left out)` : ""}\n`,
    );
    for (const r of runs) io.stdout.write(`  run ${r.runId}  trace ${r.traceId}  ${r.spans} span(s)\n`);
    return 0;
  });
}

function noRun(sessionId: string, runId: string | undefined): string {
  return runId === undefined ? `session ${sessionId} has no runs` : `session ${sessionId} has no run ${runId}`;
}

function summarize(spans: readonly TraceSpan[]): { runId: string; traceId: string; spans: number }[] {
  const runs = new Map<string, { runId: string; traceId: string; spans: number }>();
  for (const s of spans) {
    const r = runs.get(s.runId) ?? { runId: s.runId, traceId: s.traceId, spans: 0 };
    r.spans++;
    runs.set(s.runId, r);
  }
  return [...runs.values()];
}
