// Sends spans derived from the log (protocol `TraceSpan`) over OTLP/HTTP with the OpenTelemetry JS exporter.
import type { TraceSpan } from "@fleet/protocol";
import { type Attributes, type HrTime, type SpanContext, SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { ExportResultCode } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { detectResources, envDetector, type Resource, resourceFromAttributes } from "@opentelemetry/resources";
import type { ReadableSpan } from "@opentelemetry/sdk-trace";

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
 * Contract: `export` never rejects (failures are outcomes); `shutdown` waits for exports in flight.
 */
export interface OtlpSpanExporter {
  export(spans: readonly TraceSpan[]): Promise<SpanExportOutcome>;
  shutdown(): Promise<void>;
}

export function createOtlpSpanExporter(opts: { defaultServiceName: string }): OtlpSpanExporter {
  const exporter = new OTLPTraceExporter();
  const resource = resourceFromAttributes({ "service.name": opts.defaultServiceName }).merge(
    detectResources({ detectors: [envDetector] }),
  );
  return {
    export(spans) {
      if (spans.length === 0) return Promise.resolve({ ok: true, spans: 0 });
      const readable = spans.map((s) => toReadableSpan(s, resource));
      return new Promise((resolve) => {
        try {
          exporter.export(readable, (result) =>
            resolve(
              result.code === ExportResultCode.SUCCESS
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
      ? { code: SpanStatusCode.ERROR, ...(span.status.message ? { message: span.status.message } : {}) }
      : { code: span.status.code === "ok" ? SpanStatusCode.OK : SpanStatusCode.UNSET };
  return {
    name: span.name,
    kind: span.kind === "client" ? SpanKind.CLIENT : SpanKind.INTERNAL,
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
