// Sends spans derived from the log (protocol `TraceSpan`) over OTLP/HTTP with the OpenTelemetry JS exporter.
// The OpenTelemetry packages are loaded only when an exporter is made: a process without an OTLP
// endpoint does not pay for them at startup.
import type { TraceSpan } from "@fleet/protocol";
import type { Attributes, HrTime, SpanContext, SpanKind, SpanStatusCode } from "@opentelemetry/api";
import type { Resource } from "@opentelemetry/resources";
import type { ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace";

// @opentelemetry/api's enums, as values (the package is not loaded here).
const KIND_INTERNAL = 0 as SpanKind;
const KIND_CLIENT = 2 as SpanKind;
const STATUS_UNSET = 0 as SpanStatusCode;
const STATUS_OK = 1 as SpanStatusCode;
const STATUS_ERROR = 2 as SpanStatusCode;
/** @opentelemetry/core `ExportResultCode.SUCCESS`. */
const EXPORT_SUCCESS = 0;

/** The instrumentation scope named on every exported span. */
export const FLEET_TRACE_SCOPE = { name: "fleet", version: "1" } as const;

/**
 * Whether the environment configures an OTLP trace endpoint: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
 * `OTEL_EXPORTER_OTLP_ENDPOINT` set, and `OTEL_TRACES_EXPORTER` not `none`. Without one no exporter
 * is created.
 */
export function isOtlpTraceExportConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_TRACES_EXPORTER?.trim() === "none" || env.OTEL_SDK_DISABLED?.trim() === "true") return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim());
}

export type SpanExportOutcome = { ok: true; spans: number } | { ok: false; error: string };

/**
 * An OTLP/HTTP (JSON) span exporter configured by the standard variables: the endpoint and
 * `OTEL_EXPORTER_OTLP_HEADERS` (`OTEL_EXPORTER_OTLP_TRACES_*` too) are read by the OpenTelemetry
 * exporter; the resource has `service.name` = `OTEL_SERVICE_NAME`, else `defaultServiceName`, plus
 * `OTEL_RESOURCE_ATTRIBUTES`.
 * Contract: `export` never rejects (failures are outcomes); `enqueue` never throws; `shutdown`
 * sends what is queued and waits for exports in flight.
 */
export interface OtlpSpanExporter {
  /** Sends `spans` now, in one request (`fleet trace export`). */
  export(spans: readonly TraceSpan[]): Promise<SpanExportOutcome>;
  /**
   * Queues `spans` on a batch span processor (live export): sent every `OTEL_BSP_SCHEDULE_DELAY` ms
   * (5000) or `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` spans (512), at most `OTEL_BSP_MAX_QUEUE_SIZE` (2048)
   * queued (more are dropped), each export given `OTEL_BSP_EXPORT_TIMEOUT` ms (30000).
   */
  enqueue(spans: readonly TraceSpan[]): void;
  shutdown(): Promise<void>;
}

export async function createOtlpSpanExporter(opts: {
  defaultServiceName: string;
  env?: NodeJS.ProcessEnv;
  /** Called when a batch of queued spans could not be sent (they are dropped). */
  onExportError?: (error: string, spans: number) => void;
}): Promise<OtlpSpanExporter> {
  const env = opts.env ?? process.env;
  const [{ OTLPTraceExporter }, { detectResources, envDetector, resourceFromAttributes }, { BatchSpanProcessor }] =
    await Promise.all([
      import("@opentelemetry/exporter-trace-otlp-http"),
      import("@opentelemetry/resources"),
      import("@opentelemetry/sdk-trace"),
    ]);
  const exporter = new OTLPTraceExporter();
  // The batch processor drops a failed batch silently: report it.
  const reporting: SpanExporter = {
    export: (spans, done) =>
      exporter.export(spans, (result) => {
        if (result.code !== EXPORT_SUCCESS) {
          opts.onExportError?.(result.error?.message ?? "export failed", spans.length);
        }
        done(result);
      }),
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush(),
  };
  const resource = resourceFromAttributes({ "service.name": opts.defaultServiceName }).merge(
    detectResources({ detectors: [envDetector] }),
  );
  const positive = (name: string) => {
    const n = Number(env[name]);
    return Number.isInteger(n) && n > 0 ? { value: n } : undefined;
  };
  const batch = new BatchSpanProcessor({
    exporter: reporting,
    ...(positive("OTEL_BSP_SCHEDULE_DELAY")
      ? { scheduledDelayMillis: positive("OTEL_BSP_SCHEDULE_DELAY")!.value }
      : {}),
    ...(positive("OTEL_BSP_MAX_QUEUE_SIZE") ? { maxQueueSize: positive("OTEL_BSP_MAX_QUEUE_SIZE")!.value } : {}),
    ...(positive("OTEL_BSP_MAX_EXPORT_BATCH_SIZE")
      ? { maxExportBatchSize: positive("OTEL_BSP_MAX_EXPORT_BATCH_SIZE")!.value }
      : {}),
    ...(positive("OTEL_BSP_EXPORT_TIMEOUT") ? { exportTimeoutMillis: positive("OTEL_BSP_EXPORT_TIMEOUT")!.value } : {}),
  });
  return {
    enqueue(spans) {
      for (const span of spans) batch.onEnd(toReadableSpan(span, resource));
    },
    export(spans) {
      if (spans.length === 0) return Promise.resolve({ ok: true, spans: 0 });
      const readable = spans.map((s) => toReadableSpan(s, resource));
      return new Promise((resolve) => {
        try {
          exporter.export(readable, (result) =>
            resolve(
              result.code === EXPORT_SUCCESS
                ? { ok: true, spans: spans.length }
                : { ok: false, error: result.error?.message ?? "export failed" },
            ),
          );
        } catch (err) {
          resolve({ ok: false, error: (err as Error).message });
        }
      });
    },
    async shutdown() {
      await batch.shutdown().catch(() => undefined);
      await exporter.forceFlush().catch(() => undefined);
      await exporter.shutdown().catch(() => undefined);
    },
  };
}

function hrTime(ms: number): HrTime {
  const seconds = Math.floor(ms / 1000);
  return [seconds, Math.round((ms - seconds * 1000) * 1e6)];
}

function context(traceId: string, spanId: string, flags: number, traceState?: string): SpanContext {
  return {
    traceId,
    spanId,
    traceFlags: flags,
    isRemote: false,
    ...(traceState ? { traceState: { serialize: () => traceState } as SpanContext["traceState"] } : {}),
  } as SpanContext;
}

/** A derived span as the OpenTelemetry SDK's finished span. */
export function toReadableSpan(span: TraceSpan, resource: Resource): ReadableSpan {
  const own = context(span.traceId, span.spanId, span.flags, span.traceState);
  const parent = span.parentSpanId
    ? { ...context(span.traceId, span.parentSpanId, span.flags), isRemote: true }
    : undefined;
  const status =
    span.status.code === "error"
      ? { code: STATUS_ERROR, ...(span.status.message ? { message: span.status.message } : {}) }
      : { code: span.status.code === "ok" ? STATUS_OK : STATUS_UNSET };
  return {
    name: span.name,
    kind: span.kind === "client" ? KIND_CLIENT : KIND_INTERNAL,
    spanContext: () => own,
    ...(parent ? { parentSpanContext: parent } : {}),
    startTime: hrTime(span.startMs),
    endTime: hrTime(span.endMs),
    duration: hrTime(span.endMs - span.startMs),
    status,
    attributes: span.attributes as Attributes,
    links: span.links.map((l) => ({
      context: { traceId: l.traceId, spanId: l.spanId, traceFlags: 1, isRemote: true },
      attributes: l.attributes as Attributes,
    })),
    events: span.events.map((e) => ({ name: e.name, time: hrTime(e.ts), attributes: e.attributes as Attributes })),
    ended: true,
    resource,
    instrumentationScope: FLEET_TRACE_SCOPE,
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
}
