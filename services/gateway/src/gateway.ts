// The gateway process's core: Fastify with every route, the NATS links, SSE keep-alives, webhooks.
import type { AddressInfo, Socket } from "node:net";
import { fileURLToPath } from "node:url";
import { FleetError } from "@fleet/client";
import { AgentMessage, ContextMessage, FleetCommand, FleetEvent, SessionConfig, SessionEntry } from "@fleet/protocol";
import Fastify, { type FastifyBaseLogger, LogController } from "fastify";
import type { Logger } from "pino";
import { collectDefaultMetrics, Registry } from "prom-client";
import { registerConsoleStatic } from "./http/console-static.js";
import { registerCors } from "./http/cors.js";
import { fastifyErrorOf, onClientError, sendError } from "./http/error-answers.js";
import { buildOpenApi } from "./http/openapi.js";
import { registerRoutes, UNAUTHENTICATED_BODY_LIMIT_BYTES } from "./http/register-routes.js";
import type { AnyRouteSpec } from "./http/route-spec.js";
import { applySecurityHeaders } from "./http/security-headers.js";
import type { TokenTable } from "./http/tokens-file.js";
import { createMemoryRelease, majorCollection } from "./memory-release.js";
import { createGatewayMetrics } from "./metrics.js";
import { approvalRoutes } from "./routes/approvals.js";
import { blobRoutes } from "./routes/blobs.js";
import { budgetRoutes } from "./routes/budget.js";
import { commandRoutes } from "./routes/commands.js";
import { eventRoutes } from "./routes/events.js";
import { exportImportRoutes } from "./routes/export-import.js";
import { fleetHealthRoutes } from "./routes/fleet-health.js";
import { opsRoutes } from "./routes/ops.js";
import type { RouteContext } from "./routes/route-context.js";
import { sessionRoutes } from "./routes/sessions.js";
import { streamTicketRoutes } from "./routes/stream-ticket.js";
import { webhookRoutes } from "./routes/webhooks.js";
import type { SseConnection } from "./sse/sse-connection.js";
import { createStorageAlarm } from "./storage-alarm.js";
import { createTenantLinks } from "./tenant-links.js";
import { type GatewayWebOptions, webOptionsOf } from "./web-config.js";
import { createResolver, type DeliveryPolicy } from "./webhooks/safe-post.js";
import { startWebhookService, type WebhookService } from "./webhooks/webhook-service.js";
import { openWebhookStore, type WebhookStore } from "./webhooks/webhook-store.js";

export interface GatewayOptions {
  natsUrl: string;
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** Bearer tokens; undefined: loopback clients only. */
  tokens: TokenTable | undefined;
  /**
   * Without tokens: host names (besides loopback ones) that requests may name in `Host`
   * (FLEET_GATEWAY_HOSTS); default none.
   */
  allowedHosts?: readonly string[];
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
  /** CORS, stream tickets and webhook safety; default those of an empty environment (`webOptionsOf()`). */
  web?: GatewayWebOptions;
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

/** How long a client may take to send a whole request (headers and body). */
const REQUEST_TIMEOUT_MS = 300_000;

/**
 * A burst: 256 connections closed, then a second with at most 16 closes; collected then and 2 s
 * later, at most once per 10 s.
 */
const MEMORY_RELEASE = { minClosed: 256, quietMs: 1_000, quietCloses: 16, minIntervalMs: 10_000, followUpMs: 2_000 };

/** Shared schemas of the OpenAPI document, by component name. */
const COMPONENTS = { FleetEvent, FleetCommand, SessionEntry, SessionConfig, AgentMessage, ContextMessage };

/**
 * Starts listening at once; NATS is connected in the background (routes answer 503 until then and
 * whenever the connection is down). Stateless: any number of gateways may run side by side.
 */
export async function startGateway(opts: GatewayOptions): Promise<Gateway> {
  const { logger } = opts;
  const web = opts.web ?? webOptionsOf();
  const policy: DeliveryPolicy = {
    allowance: web.webhookAllowance,
    resolve: createResolver(web.webhookDnsServers),
  };
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
      policy,
      maxFailures: web.webhookMaxFailures,
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
    ...eventRoutes(ctx, connections),
    ...streamTicketRoutes(ctx, { key: web.ticketKey, ttlMs: web.ticketTtlMs, now: Date.now }),
    ...exportImportRoutes(ctx),
    ...blobRoutes(ctx),
    ...approvalRoutes(ctx),
    ...budgetRoutes(ctx),
    ...fleetHealthRoutes(ctx),
    ...webhookRoutes(ctx, webhookStore, policy),
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
    // Routes that take a body authenticate first and raise this to `bodyLimitBytes`.
    bodyLimit: UNAUTHENTICATED_BODY_LIMIT_BYTES,
    // Node's own default, which Fastify turns off: a request must arrive whole within this.
    requestTimeout: REQUEST_TIMEOUT_MS,
    forceCloseConnections: true,
    frameworkErrors: (err, _request, reply) => void sendError(reply, fastifyErrorOf(err, undefined)),
    clientErrorHandler: onClientError,
  });
  applySecurityHeaders(app.server);
  const gc = majorCollection();
  const memory = createMemoryRelease({
    ...MEMORY_RELEASE,
    now: Date.now,
    collect: (closed) => {
      gc();
      if (closed > 0) {
        logger.info(
          { evt: "gateway_memory_released", closed },
          "collecting garbage after a burst of closed connections",
        );
      }
    },
  });
  app.server.on("connection", (socket: Socket) => socket.once("close", memory.closed));
  app.addHook("onResponse", async (request, reply) => {
    metrics.requests.observe(
      { method: request.method, route: request.routeOptions.url ?? "none", status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });
  const storageAlarm = createStorageAlarm({ logger, metrics, now: Date.now });
  await registerCors(app, web.corsOrigins);
  registerRoutes(app, routes, {
    tokens: opts.tokens,
    allowedHosts: new Set((opts.allowedHosts ?? []).map((h) => h.toLowerCase())),
    bodyLimitBytes: opts.bodyLimitBytes,
    natsUp: links.natsUp,
    logger,
    onStorageFull: storageAlarm.refused,
    corsOrigins: new Set(web.corsOrigins),
    tickets: { key: web.ticketKey, now: Date.now },
  });
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
      ...(opts.tokens ? {} : { hosts: opts.allowedHosts ?? [] }),
    },
    "gateway listening",
  );
  if (!opts.tokens) {
    logger.warn(
      { evt: "gateway_loopback_only" },
      "FLEET_GATEWAY_TOKENS is not set: accepting loopback clients only (tenant local, role operate), addressed by a loopback name or one of FLEET_GATEWAY_HOSTS, and no cross-origin browser writes",
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
      memory.stop();
      for (const connection of connections) connection.end();
      await webhooks?.stop();
      await app.close();
      await links.close();
      logger.info({ evt: "gateway_stopped" }, "gateway stopped");
    },
  };
}
