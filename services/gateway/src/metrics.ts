// Prometheus metrics of the gateway.
import { Counter, Gauge, Histogram, type Registry } from "prom-client";

export interface GatewayMetrics {
  requests: Histogram<"method" | "route" | "status">;
  sseClients: Gauge;
  sseDropped: Counter;
  hubs: Gauge;
  commands: Counter<"type" | "outcome">;
  publishesRefused: Counter<"route">;
  webhookDeliveries: Counter<"outcome">;
}

export function createGatewayMetrics(registry: Registry, hubCount: () => number): GatewayMetrics {
  return {
    requests: new Histogram({
      name: "fleet_gateway_http_request_seconds",
      help: "HTTP requests by route and status (SSE streams are not included)",
      labelNames: ["method", "route", "status"],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
      registers: [registry],
    }),
    sseClients: new Gauge({
      name: "fleet_gateway_sse_clients",
      help: "Open SSE streams (session events and AG-UI)",
      registers: [registry],
    }),
    sseDropped: new Counter({
      name: "fleet_gateway_sse_dropped_total",
      help: "SSE clients dropped for falling too far behind",
      registers: [registry],
    }),
    hubs: new Gauge({
      name: "fleet_gateway_session_tails",
      help: "Sessions with a live tail (one per session, shared by its SSE clients)",
      registers: [registry],
      collect() {
        this.set(hubCount());
      },
    }),
    commands: new Counter({
      name: "fleet_gateway_commands_total",
      help: "Commands sent, by type and outcome (command_accepted, command_rejected, pending)",
      labelNames: ["type", "outcome"],
      registers: [registry],
    }),
    publishesRefused: new Counter({
      name: "fleet_gateway_publishes_refused_total",
      help: "Requests whose write (a command, a session, an import, the budget) JetStream refused because its storage is full (503 storage_full), by route",
      labelNames: ["route"],
      registers: [registry],
    }),
    webhookDeliveries: new Counter({
      name: "fleet_gateway_webhook_deliveries_total",
      help: "Webhook delivery attempts by outcome (ok, http, refused, timeout, error), and webhooks disabled after a run of failures (disabled)",
      labelNames: ["outcome"],
      registers: [registry],
    }),
  };
}
