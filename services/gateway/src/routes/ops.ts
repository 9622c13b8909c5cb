// Operations: /healthz, /readyz, /metrics and /openapi.json (public, like the other services' ops ports).
import type { Registry } from "prom-client";
import { z } from "zod";
import { type AnyRouteSpec, defineRoute } from "../http/route-spec.js";

export function opsRoutes(deps: { natsUp(): boolean; registry: Registry; openApi(): unknown }): AnyRouteSpec[] {
  return [
    defineRoute({
      method: "GET",
      url: "/healthz",
      operationId: "healthz",
      summary: "The process is alive",
      tag: "ops",
      access: "public",
      usesNats: false,
      responses: { 200: { description: "`ok`", contentType: "text/plain" } },
      handler: async () => ({ status: 200, text: "ok\n", contentType: "text/plain" }),
    }),
    defineRoute({
      method: "GET",
      url: "/readyz",
      operationId: "readyz",
      summary: "Ready: the NATS connection is up",
      tag: "ops",
      access: "public",
      usesNats: false,
      responses: {
        200: { description: "`ready`", contentType: "text/plain" },
        503: { description: "`not ready`", contentType: "text/plain" },
      },
      handler: async () =>
        deps.natsUp()
          ? { status: 200, text: "ready\n", contentType: "text/plain" }
          : { status: 503, text: "not ready\n", contentType: "text/plain" },
    }),
    defineRoute({
      method: "GET",
      url: "/metrics",
      operationId: "metrics",
      summary: "Prometheus metrics",
      tag: "ops",
      access: "public",
      usesNats: false,
      responses: { 200: { description: "Prometheus text format", contentType: "text/plain" } },
      handler: async () => ({
        status: 200,
        text: await deps.registry.metrics(),
        contentType: deps.registry.contentType,
      }),
    }),
    defineRoute({
      method: "GET",
      url: "/openapi.json",
      operationId: "openapi",
      summary: "This document (OpenAPI 3.1, generated from the zod schemas)",
      tag: "ops",
      access: "public",
      usesNats: false,
      responses: { 200: { description: "The OpenAPI document", schema: z.record(z.string(), z.unknown()) } },
      handler: async () => ({ status: 200, json: deps.openApi() }),
    }),
  ];
}
