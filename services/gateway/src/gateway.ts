// The gateway process's core: Fastify with every route, the NATS links, SSE keep-alives, webhooks.
import type { AddressInfo, Socket } from "node:net";
import { fileURLToPath } from "node:url";
import { FleetError } from "@fleet/client";
import { AgentMessage, ContextMessage, FleetCommand, FleetEvent, SessionConfig, SessionEntry } from "@fleet/protocol";
import type { NatsAuthSettings } from "@fleet/runtime";
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
import { agentRoutes } from "./routes/agents.js";
import { aguiRoutes } from "./routes/agui.js";
import { approvalRuleRoutes } from "./routes/approval-rules.js";
import { approvalRoutes } from "./routes/approvals.js";
import { blobRoutes } from "./routes/blobs.js";
import { budgetRoutes } from "./routes/budget.js";
import { changeRoutes } from "./routes/changes.js";
import { ChildNode, childrenRoutes } from "./routes/children.js";
import { commandRoutes } from "./routes/commands.js";
import { eventRoutes } from "./routes/events.js";
import { exportImportRoutes } from "./routes/export-import.js";
import { fleetHealthRoutes } from "./routes/fleet-health.js";
import { lifecycleRoutes } from "./routes/lifecycle.js";
import { mcpRoutes } from "./routes/mcp.js";
import { opsRoutes } from "./routes/ops.js";
import type { RouteContext } from "./routes/route-context.js";
import { scheduleRoutes } from "./routes/schedules.js";
import { sessionRoutes } from "./routes/sessions.js";
import { streamTicketRoutes } from "./routes/stream-ticket.js";
import { webhookRoutes } from "./routes/webhooks.js";
import type { SseConnection } from "./sse/sse-connection.js";
import { createStorageAlarm } from "./storage-alarm.js";
import { checkIdentities, tenantIdentities } from "./tenant-identities.js";
import { createTenantLinks } from "./tenant-links.js";
import { type GatewayWebOptions, webOptionsOf } from "./web-config.js";
import { createResolver, type DeliveryPolicy } from "./webhooks/safe-post.js";
import { startWebhookService, type WebhookService } from "./webhooks/webhook-service.js";
import { openWebhookStore, type WebhookStore } from "./webhooks/webhook-store.js";

export interface GatewayOptions {
  natsUrl: string;
  /** The gateway's own NATS login (NATS_*); default anonymous. */
  natsAuth?: NatsAuthSettings;
  /**
   * FLEET_TENANT: the tenant whose account `natsAuth` logs in to. With a tokens file, tokens of this
   * tenant use that login; every other tenant needs a login of its own in the tokens file.
   */
  tenant?: string | undefined;
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
  /** Replicas of the webhook bucket it creates (FLEET_STREAM_REPLICAS); default 1. */
  replicas?: number;
  /** NATS connection name prefix (`<name>-<tenant>`); default `fleet-gateway`. */
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
  /** Resolves once every tenant's connection is up and each of its webhooks has its deliverer. */
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
const MEMORY_RELEASE = { minClosed: 256, quietMs: 500, quietCloses: 16, minIntervalMs: 3_000, followUpMs: 1_500 };

/** Shared schemas of the OpenAPI document, by component name. */
const COMPONENTS = {
  FleetEvent,
  FleetCommand,
  SessionEntry,
  SessionConfig,
  AgentMessage,
  ContextMessage,
  SessionChild: ChildNode,
};

/** Settings that cannot work (a tenant without NATS identity, an unreadable creds file): one line. */
export class GatewayConfigError extends Error {
  override readonly name = "GatewayConfigError";
}

/**
 * Starts listening at once; NATS is connected in the background, one connection per tenant, each as
 * that tenant's own identity (routes answer 503 until then and whenever it is down). Each tenant's
 * webhooks live in its own account. Stateless: any number of gateways may run side by side.
 * Rejects with a `GatewayConfigError` when a tenant has no usable identity.
 */
export async function startGateway(opts: GatewayOptions): Promise<Gateway> {
  const { logger } = opts;
  const identities = tenantIdentities({ tokens: opts.tokens, ownTenant: opts.tenant, ownLogin: opts.natsAuth ?? {} });
  if (!identities.ok) throw new GatewayConfigError(identities.error);
  const invalid = checkIdentities(identities.identities);
  if (invalid) throw new GatewayConfigError(invalid);
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
    identities: identities.identities,
    commandTimeoutMs: opts.commandTimeoutMs,
    logger,
  });
  const metrics = createGatewayMetrics(registry, () => links.all().reduce((n, l) => n + l.hubs.size, 0));

  // Each tenant's webhooks: KV fleet_webhooks and the deliverers, in the tenant's own account.
  const webhooks: WebhookService[] = [];
  const stores = new Map<string, Promise<WebhookStore>>();
  const tenantsReady: Promise<void>[] = [];
  for (const tenant of links.tenants) {
    const store = links
      .ready(tenant)
      .then((link) =>
        openWebhookStore(
          link.client.nc,
          link.client.jsm,
          { partitions: link.client.partitions, groups: link.client.groups },
          opts.replicas,
        ),
      );
    store.catch(() => undefined);
    stores.set(tenant, store);
    tenantsReady.push(
      store.then(async (s) => {
        const link = await links.ready(tenant);
        const service = startWebhookService({
          store: s,
          js: link.client.js,
          follow: { statuses: () => link.client.nc.status() },
          backoffMs: opts.webhookBackoffMs,
          backoffMaxMs: opts.webhookBackoffMaxMs,
          timeoutMs: opts.webhookTimeoutMs,
          policy,
          maxFailures: web.webhookMaxFailures,
          logger: logger.child({ tenant }),
          metrics,
        });
        webhooks.push(service);
        await service.ready;
      }),
    );
  }
  const ready = Promise.all(tenantsReady).then(() => undefined);
  ready.catch(() => undefined);
  const webhookStore = async (tenant: string) => {
    const store = stores.get(tenant);
    if (!store) throw new FleetError("unavailable", "nats_unreachable", `no NATS identity for tenant ${tenant}`);
    await links.forTenant(tenant);
    return store;
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
    ...childrenRoutes(ctx),
    ...commandRoutes(ctx),
    ...lifecycleRoutes(ctx),
    ...eventRoutes(ctx, connections),
    ...streamTicketRoutes(ctx, { key: web.ticketKey, ttlMs: web.ticketTtlMs, now: Date.now }),
    ...changeRoutes(ctx, { key: web.ticketKey, ttlMs: web.ticketTtlMs, now: Date.now }),
    ...exportImportRoutes(ctx),
    ...blobRoutes(ctx),
    ...approvalRoutes(ctx),
    ...aguiRoutes(ctx),
    ...mcpRoutes(ctx, GATEWAY_VERSION),
    ...approvalRuleRoutes(ctx),
    ...agentRoutes(ctx),
    ...budgetRoutes(ctx),
    ...scheduleRoutes(ctx),
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
    natsUp: links.isUp,
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
      tenants: identities.identities.map((i) => `${i.tenant} (${i.source === "env" ? "NATS_*" : "tokens file"})`),
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
      await Promise.all(webhooks.map((w) => w.stop()));
      await app.close();
      await links.close();
      logger.info({ evt: "gateway_stopped" }, "gateway stopped");
    },
  };
}
