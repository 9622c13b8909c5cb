// The gateway process's core: Fastify with every route, the NATS links, SSE keep-alives, webhooks.
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { FleetError } from "@fleet/client";
import { AgentMessage, ContextMessage, FleetCommand, FleetEvent, SessionConfig, SessionEntry } from "@fleet/protocol";
import Fastify, { type FastifyBaseLogger, LogController } from "fastify";
import type { Logger } from "pino";
import { collectDefaultMetrics, Registry } from "prom-client";
import { registerConsoleStatic } from "./http/console-static.js";
import { buildOpenApi } from "./http/openapi.js";
import { registerRoutes } from "./http/register-routes.js";
import type { AnyRouteSpec } from "./http/route-spec.js";
import type { TokenTable } from "./http/tokens-file.js";
import { createGatewayMetrics } from "./metrics.js";
import { approvalRoutes } from "./routes/approvals.js";
import { budgetRoutes } from "./routes/budget.js";
import { commandRoutes } from "./routes/commands.js";
import { eventRoutes } from "./routes/events.js";
import { exportImportRoutes } from "./routes/export-import.js";
import { fleetHealthRoutes } from "./routes/fleet-health.js";
import { lifecycleRoutes } from "./routes/lifecycle.js";
import { opsRoutes } from "./routes/ops.js";
import type { RouteContext } from "./routes/route-context.js";
import { sessionRoutes } from "./routes/sessions.js";
import { webhookRoutes } from "./routes/webhooks.js";
import type { SseConnection } from "./sse/sse-connection.js";
import { createTenantLinks } from "./tenant-links.js";
import { startWebhookService, type WebhookService } from "./webhooks/webhook-service.js";
import { openWebhookStore, type WebhookStore } from "./webhooks/webhook-store.js";

export interface GatewayOptions {
  natsUrl: string;
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** Bearer tokens; undefined: loopback clients only. */
  tokens: TokenTable | undefined;
  commandTimeoutMs: number;
  keepaliveMs: number;
  sseBufferBytes: number;
  bodyLimitBytes: number;
  webhookBackoffMs: number;
  webhookBackoffMaxMs: number;
  webhookTimeoutMs: number;
  logger: Logger;
  /** NATS connection name; default `fleet-gateway`. */
  name?: string;
  /** The web console's built files, served at `/`; default `services/console/dist`. */
  consoleDir?: string;
}

export interface Gateway {
  /** `http://<host>:<port>`. */
  readonly url: string;
  readonly port: number;
  readonly registry: Registry;
  /** Resolves once NATS is connected and every webhook has its deliverer. */
  readonly ready: Promise<void>;
  /** The OpenAPI document and the route specs it was built from. */
  readonly openApi: Record<string, unknown>;
  readonly routes: readonly AnyRouteSpec[];
  close(): Promise<void>;
}

export const GATEWAY_VERSION = "0.1.0";

/** Shared schemas of the OpenAPI document, by component name. */
const COMPONENTS = { FleetEvent, FleetCommand, SessionEntry, SessionConfig, AgentMessage, ContextMessage };

/**
 * Starts listening at once; NATS is connected in the background (routes answer 503 until then and
 * whenever the connection is down). Stateless: any number of gateways may run side by side.
 */
export async function startGateway(opts: GatewayOptions): Promise<Gateway> {
  const { logger } = opts;
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const links = createTenantLinks({
    natsUrl: opts.natsUrl,
    name: opts.name ?? "fleet-gateway",
    credsOf: (tenant) => opts.tokens?.credsOf(tenant),
    commandTimeoutMs: opts.commandTimeoutMs,
    logger,
  });
  const metrics = createGatewayMetrics(registry, () => links.all().reduce((n, l) => n + l.hubs.size, 0));

  let webhooks: WebhookService | undefined;
  const storePromise: Promise<WebhookStore> = links.ready.then((link) =>
    openWebhookStore(link.client.nc, link.client.jsm, link.client.partitions),
  );
  storePromise.catch(() => undefined);
  const ready = storePromise.then(async (store) => {
    const link = await links.ready;
    webhooks = startWebhookService({
      store,
      js: link.client.js,
      follow: { statuses: () => link.client.nc.status() },
      backoffMs: opts.webhookBackoffMs,
      backoffMaxMs: opts.webhookBackoffMaxMs,
      timeoutMs: opts.webhookTimeoutMs,
      logger,
      metrics,
    });
    await webhooks.ready;
  });
  ready.catch(() => undefined);
  const webhookStore = async () => {
    if (!links.natsUp()) throw new FleetError("unavailable", "nats_unreachable", "NATS is unreachable");
    return storePromise;
  };

  const ctx: RouteContext = {
    links,
    logger,
    metrics,
    commandTimeoutMs: opts.commandTimeoutMs,
    keepaliveMs: opts.keepaliveMs,
    sseBufferBytes: opts.sseBufferBytes,
  };
  const connections = new Set<SseConnection>();
  let openApi: Record<string, unknown> = {};
  const routes: AnyRouteSpec[] = [
    ...sessionRoutes(ctx),
    ...commandRoutes(ctx),
    ...lifecycleRoutes(ctx),
    ...eventRoutes(ctx, connections),
    ...exportImportRoutes(ctx),
    ...approvalRoutes(ctx),
    ...budgetRoutes(ctx),
    ...fleetHealthRoutes(ctx),
    ...webhookRoutes(ctx, webhookStore),
    ...opsRoutes({ natsUp: links.natsUp, registry, openApi: () => openApi }),
  ];
  openApi = buildOpenApi({
    title: "Fleet HTTP gateway",
    version: GATEWAY_VERSION,
    description:
      "Every Fleet operation over HTTP. Bodies are the protocol's own shapes (PROTOCOL.md); errors are `{error: {code, message}}`.",
    routes,
    components: COMPONENTS,
  });

  const app = Fastify({
    loggerInstance: logger.child({ component: "http" }) as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: opts.bodyLimitBytes,
    forceCloseConnections: true,
  });
  app.addHook("onResponse", async (request, reply) => {
    metrics.requests.observe(
      { method: request.method, route: request.routeOptions.url ?? "none", status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });
  registerRoutes(app, routes, { tokens: opts.tokens, natsUp: links.natsUp, logger });
  registerConsoleStatic(app, opts.consoleDir ?? fileURLToPath(new URL("../../console/dist/", import.meta.url)));

  const keepalive = setInterval(() => {
    for (const connection of connections) connection.comment("keepalive");
  }, opts.keepaliveMs);
  keepalive.unref();

  await app.listen({ host: opts.host, port: opts.port });
  const port = (app.server.address() as AddressInfo).port;
  const url = `http://${opts.host.includes(":") ? `[${opts.host}]` : opts.host}:${port}`;
  logger.info(
    {
      evt: "gateway_started",
      url,
      nats: opts.natsUrl,
      auth: opts.tokens ? `${opts.tokens.size} tokens` : "loopback only",
    },
    "gateway listening",
  );
  if (!opts.tokens) {
    logger.warn(
      { evt: "gateway_loopback_only" },
      "FLEET_GATEWAY_TOKENS is not set: accepting loopback clients only (tenant local, role operate)",
    );
  }

  return {
    url,
    port,
    registry,
    ready,
    openApi,
    routes,
    async close() {
      clearInterval(keepalive);
      for (const connection of connections) connection.end();
      await webhooks?.stop();
      await app.close();
      await links.close();
      logger.info({ evt: "gateway_stopped" }, "gateway stopped");
    },
  };
}
