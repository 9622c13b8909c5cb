// The gateway's NATS connections: one per tenant, each logged in as that tenant's own identity.
import { type ChangeFeed, createChangeFeed, DEFAULT_CHANGE_WINDOW_MS, FleetClient, FleetError } from "@fleet/client";
import { parseLifecycleSubject, subjects } from "@fleet/protocol";
import { connectFleet, NatsConnectError, sleep } from "@fleet/runtime";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { createHubRegistry, type HubRegistry } from "./sse/hub-registry.js";
import type { TenantIdentity } from "./tenant-identities.js";
import { createViewCache, type ViewCache } from "./view-cache.js";

/** Sessions whose folded view a link keeps (each about the size of its transcript). */
const VIEW_CACHE_ENTRIES = 256;
/** Failed connects logged: the first, then every this many. */
const LOG_EVERY_ATTEMPTS = 20;

/** What the routes of one tenant use: its client and its session hubs. */
export interface TenantLink {
  readonly tenant: string;
  readonly client: FleetClient;
  readonly hubs: HubRegistry;
  /** Folded views of recently read sessions (`GET /v1/sessions/{id}`). */
  readonly views: ViewCache;
  /** The tenant's change feed (`GET /v1/changes`). */
  readonly changes: ChangeFeed;
  /** False while the connection is down (reconnecting). */
  isUp(): boolean;
}

export interface TenantLinks {
  /** Every tenant the gateway serves. */
  readonly tenants: readonly string[];
  /** Resolves when the tenant's link is connected (rejects when `close()` came first). */
  ready(tenant: string): Promise<TenantLink>;
  /** True when every tenant's connection is up. */
  natsUp(): boolean;
  /** True when the tenant's connection is up. */
  isUp(tenant: string): boolean;
  /** The link a tenant's requests use. Throws a `FleetError` (`unavailable`) while it is down. */
  forTenant(tenant: string): Promise<TenantLink>;
  /** Every open link, for gauges. */
  all(): TenantLink[];
  close(): Promise<void>;
}

export interface TenantLinksOptions {
  natsUrl: string;
  name: string;
  /** Each tenant's login (`tenantIdentities`, checked with `checkIdentities`). */
  identities: readonly TenantIdentity[];
  commandTimeoutMs: number;
  logger: Logger;
}

/**
 * Every tenant's connection is opened in the background as the `gateway` role (its inbox prefix,
 * its login, TLS) and retried until it works, so the HTTP side starts at once and a tenant's routes
 * answer 503 meanwhile. A refused login is logged as one line naming the tenant and the user. Every
 * connection reconnects forever.
 */
export function createTenantLinks(opts: TenantLinksOptions): TenantLinks {
  const { logger } = opts;
  let closed = false;
  const abort = new AbortController();
  const links = new Map<string, TenantLink>();

  const open = async (tenant: string, nc: NatsConnection): Promise<TenantLink> => {
    const client = await FleetClient.fromConnection(nc, { commandTimeoutMs: opts.commandTimeoutMs });
    let up = true;
    // Its own status watch says `all` when the connection comes back (notices sent meanwhile are gone).
    const changes = createChangeFeed(nc, { windowMs: DEFAULT_CHANGE_WINDOW_MS, logger });
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === "disconnect") {
          up = false;
          logger.warn({ evt: "gateway_nats_disconnected", tenant, server: s.server }, "NATS connection lost");
        } else if (s.type === "reconnect") {
          up = true;
          logger.info({ evt: "gateway_nats_reconnected", tenant, server: s.server }, "NATS connection back");
        }
      }
    })().catch(() => undefined);
    const hubs = createHubRegistry(client, logger);
    // On any lifecycle record (deleted, archived, restored) the session's hub goes: the log it tails
    // was purged or rewritten; the next client starts a new one.
    nc.subscribe(subjects.lifecycleAll, {
      callback: (err, msg) => {
        const sessionId = err ? null : parseLifecycleSubject(msg.subject);
        if (sessionId) hubs.forget(sessionId);
      },
    });
    return {
      tenant,
      client,
      hubs,
      views: createViewCache(client, VIEW_CACHE_ENTRIES),
      changes,
      isUp: () => up && !nc.isClosed(),
    };
  };

  const connectTenant = async ({ tenant, login }: TenantIdentity): Promise<TenantLink> => {
    for (let attempt = 1; !closed; attempt++) {
      let nc: NatsConnection | undefined;
      try {
        ({ nc } = await connectFleet({
          role: "gateway",
          url: opts.natsUrl,
          name: `${opts.name}-${tenant}`,
          auth: login,
          timeoutMs: 5_000,
          onPermissionError: (line, detail) =>
            logger.error({ evt: "nats_permission_denied", tenant, ...detail }, `tenant ${tenant}: ${line}`),
        }));
        const link = await open(tenant, nc);
        if (closed) {
          await nc.close().catch(() => undefined);
          break;
        }
        links.set(tenant, link);
        logger.info({ evt: "gateway_nats_connected", tenant, nats: nc.getServer() }, "connected to NATS");
        return link;
      } catch (err) {
        await nc?.close().catch(() => undefined);
        if (attempt === 1 || attempt % LOG_EVERY_ATTEMPTS === 0) {
          const refused = err instanceof NatsConnectError && err.code === "login_refused";
          // One line: the message names the server and who tried to log in, never a secret.
          logger.error(
            {
              evt: refused ? "gateway_nats_login_refused" : "gateway_nats_unavailable",
              tenant,
              attempt,
              error: (err as Error).message,
            },
            `tenant ${tenant}: ${(err as Error).message}; retrying`,
          );
        }
        await sleep(Math.min(5_000, 250 * attempt), abort.signal);
      }
    }
    throw new FleetError("unavailable", "closed", "the gateway is closing");
  };

  const pending = new Map<string, Promise<TenantLink>>();
  for (const identity of opts.identities) {
    const link = connectTenant(identity);
    link.catch(() => undefined);
    pending.set(identity.tenant, link);
  }
  const unavailable = (detail: string) => new FleetError("unavailable", "nats_unreachable", detail);

  return {
    tenants: opts.identities.map((i) => i.tenant),
    ready(tenant) {
      return pending.get(tenant) ?? Promise.reject(unavailable(`the gateway does not serve tenant ${tenant}`));
    },
    natsUp: () => opts.identities.every((i) => links.get(i.tenant)?.isUp() ?? false),
    isUp: (tenant) => links.get(tenant)?.isUp() ?? false,
    async forTenant(tenant) {
      const link = links.get(tenant);
      if (!link?.isUp()) {
        throw unavailable(
          pending.has(tenant) ? `NATS is unreachable for tenant ${tenant}` : `no NATS identity for tenant ${tenant}`,
        );
      }
      return link;
    },
    all: () => [...links.values()],
    async close() {
      closed = true;
      abort.abort();
      await Promise.allSettled(pending.values());
      for (const link of links.values()) {
        link.hubs.stopAll();
        await link.client.nc.drain().catch(() => undefined);
      }
    },
  };
}
