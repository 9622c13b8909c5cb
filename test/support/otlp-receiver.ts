// A real OTLP/HTTP trace receiver for tests: a node http server on 127.0.0.1 that takes
// `POST /v1/traces` in OTLP/JSON (what @opentelemetry/exporter-trace-otlp-http sends), decodes each
// request with the OTLP/JSON schema below and keeps the spans with their resource.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { z } from "zod";

const AnyValue: z.ZodType<unknown> = z.lazy(() =>
  z.object({
    stringValue: z.string().optional(),
    boolValue: z.boolean().optional(),
    intValue: z.union([z.number(), z.string()]).optional(),
    doubleValue: z.number().optional(),
    arrayValue: z.object({ values: z.array(AnyValue).optional() }).optional(),
  }),
);
const KeyValue = z.object({ key: z.string(), value: AnyValue });
const Nanos = z.union([z.string(), z.number()]);
/** OTLP/JSON `ExportTraceServiceRequest` (opentelemetry-proto, trace/v1), the fields tests read. */
const ExportTraceServiceRequest = z.object({
  resourceSpans: z.array(
    z.object({
      resource: z.object({ attributes: z.array(KeyValue).optional() }).optional(),
      scopeSpans: z.array(
        z.object({
          scope: z.object({ name: z.string(), version: z.string().optional() }).optional(),
          spans: z.array(
            z.object({
              traceId: z.string().regex(/^[0-9a-f]{32}$/),
              spanId: z.string().regex(/^[0-9a-f]{16}$/),
              parentSpanId: z.string().optional(),
              traceState: z.string().optional(),
              name: z.string(),
              kind: z.number().int(),
              startTimeUnixNano: Nanos,
              endTimeUnixNano: Nanos,
              attributes: z.array(KeyValue).optional(),
              events: z
                .array(z.object({ name: z.string(), timeUnixNano: Nanos, attributes: z.array(KeyValue).optional() }))
                .optional(),
              links: z.array(z.object({ traceId: z.string(), spanId: z.string() })).optional(),
              status: z.object({ code: z.number().int().optional(), message: z.string().optional() }).optional(),
            }),
          ),
        }),
      ),
    }),
  ),
});

export type AttributeValue = string | number | boolean | AttributeValue[];

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  traceState: string | undefined;
  name: string;
  /** OTLP SpanKind: 1 internal, 3 client. */
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, AttributeValue>;
  events: { name: string; attributes: Record<string, AttributeValue> }[];
  links: { traceId: string; spanId: string }[];
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  statusCode: number;
  resource: Record<string, AttributeValue>;
  scope: string | undefined;
}

export interface OtlpReceiver {
  /** `http://127.0.0.1:<port>`, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  readonly endpoint: string;
  /** Every span received, in arrival order. */
  readonly spans: ReceivedSpan[];
  /** Requests that were not valid OTLP/JSON trace exports (answered 400). */
  readonly rejected: string[];
  /** Headers of each request. */
  readonly headers: Record<string, string | string[] | undefined>[];
  close(): Promise<void>;
}

function value(v: unknown): AttributeValue {
  const x = v as {
    stringValue?: string;
    boolValue?: boolean;
    intValue?: number | string;
    doubleValue?: number;
    arrayValue?: { values?: unknown[] };
  };
  if (x.stringValue !== undefined) return x.stringValue;
  if (x.boolValue !== undefined) return x.boolValue;
  if (x.intValue !== undefined) return Number(x.intValue);
  if (x.doubleValue !== undefined) return x.doubleValue;
  if (x.arrayValue) return (x.arrayValue.values ?? []).map(value);
  return "";
}
const attrs = (list: { key: string; value: unknown }[] | undefined) =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, value(kv.value)]));
const ms = (nanos: string | number) => Number(BigInt(nanos) / 1_000_000n);

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const rejected: string[] = [];
  const headers: OtlpReceiver["headers"] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      headers.push({ ...req.headers });
      const parsed =
        req.method === "POST" && req.url === "/v1/traces" && String(req.headers["content-type"]).includes("json")
          ? ExportTraceServiceRequest.safeParse(safeJson(body))
          : undefined;
      if (!parsed?.success) {
        rejected.push(
          `${req.method} ${req.url} ${req.headers["content-type"]}: ${parsed?.error.message ?? "not OTLP/JSON"}`,
        );
        res.writeHead(400).end();
        return;
      }
      for (const rs of parsed.data.resourceSpans) {
        const resource = attrs(rs.resource?.attributes);
        for (const ss of rs.scopeSpans) {
          for (const s of ss.spans) {
            spans.push({
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId || undefined,
              traceState: s.traceState || undefined,
              name: s.name,
              kind: s.kind,
              startMs: ms(s.startTimeUnixNano),
              endMs: ms(s.endTimeUnixNano),
              attributes: attrs(s.attributes),
              events: (s.events ?? []).map((e) => ({ name: e.name, attributes: attrs(e.attributes) })),
              links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
              statusCode: s.status?.code ?? 0,
              resource,
              scope: ss.scope?.name,
            });
          }
        }
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    rejected,
    headers,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
