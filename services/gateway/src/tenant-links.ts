// NATS connections of the gateway: its own, and one per tenant that has credentials of its own.
import { readFileSync } from "node:fs";
import { FleetClient, FleetError } from "@fleet/client";
import { parseLifecycleSubject, subjects } from "@fleet/protocol";
import { connectNats, sleep } from "@fleet/runtime";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { type ApprovalsIndex, createApprovalsIndex } from "./approvals-index.js";
import { createHubRegistry, type HubRegistry } from "./sse/hub-registry.js";
import { createViewCache, type ViewCache } from "./view-cache.js";

/** Sessions whose folded view a link keeps (each about the size of its transcript). */
const VIEW_CACHE_ENTRIES = 256;

/** What the routes of one tenant use: its client, its session hubs and its approvals index. */
export interface TenantLink {
  readonly client: FleetClient;
  readonly hubs: HubRegistry;
  readonly approvals: ApprovalsIndex;
  /** Folded views of recently read sessions (`GET /v1/sessions/{id}`). */
  readonly views: ViewCache;
  /** False while the connection is down (reconnecting). */
  isUp(): boolean;
}

export interface TenantLinks {
  /** The gateway's own link, once connected. */
  readonly own: TenantLink | undefined;
  /** Resolves when the gateway's own link is connected (or rejects when `close()` came first). */
  readonly ready: Promise<TenantLink>;
  /** True when the gateway's own connection is up. */
  natsUp(): boolean;
  /** The link a tenant's requests use. Throws a `FleetError` (`unavailable`) when it is down. */
  forTenant(tenant: string): Promise<TenantLink>;
  /** Every link, for gauges. */
  all(): TenantLink[];
  close(): Promise<void>;
}

export interface TenantLinksOptions {
  natsUrl: string;
  name: string;
  /** Credentials file of a tenant, when it has its own (else the gateway's connection). */
  credsOf(tenant: string): string | undefined;
  commandTimeoutMs: number;
  logger: Logger;
}

/**
 * The gateway's own connection is opened in the background and retried until it works, so the HTTP
 * side starts at once and answers 503 meanwhile. A tenant link with credentials is opened on its
 * first request. Every connection reconnects forever.
 */
export function createTenantLinks(opts: TenantLinksOptions): TenantLinks {
  const { logger } = opts;
  let own: TenantLink | undefined;
  let closed = false;
  const abort = new AbortController();
  const links = new Map<string, Promise<TenantLink>>();
  const opened: TenantLink[] = [];

  const open = async (nc: NatsConnection): Promise<TenantLink> => {
    const client = await FleetClient.fromConnection(nc, { commandTimeoutMs: opts.commandTimeoutMs });
    let up = true;
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === "disconnect") {
          up = false;
          logger.warn({ evt: "gateway_nats_disconnected", server: s.server }, "NATS connection lost");
        } else if (s.type === "reconnect") {
          up = true;
          logger.info({ evt: "gateway_nats_reconnected", server: s.server }, "NATS connection back");
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
    const link: TenantLink = {
      client,
      hubs,
      approvals: createApprovalsIndex(client),
      views: createViewCache(client, VIEW_CACHE_ENTRIES),
      isUp: () => up && !nc.isClosed(),
    };
    opened.push(link);
    return link;
  };

  const ready = (async () => {
    for (let attempt = 1; !closed; attempt++) {
      let nc: NatsConnection | undefined;
      try {
        nc = await connectNats({ url: opts.natsUrl, name: opts.name, timeoutMs: 5_000 });
        own = await open(nc);
        logger.info({ evt: "gateway_nats_connected", nats: opts.natsUrl }, "connected to NATS");
        return own;
      } catch (err) {
        await nc?.close().catch(() => undefined);
        if (attempt === 1 || attempt % 20 === 0) {
          logger.warn({ evt: "gateway_nats_unavailable", err, attempt }, "cannot reach NATS yet; retrying");
        }
        await sleep(Math.min(5_000, 250 * attempt), abort.signal);
      }
    }
    throw new FleetError("unavailable", "closed", "the gateway is closing");
  })();
  ready.catch(() => undefined);

  const unavailable = (detail: string) => new FleetError("unavailable", "nats_unreachable", detail);

  return {
    get own() {
      return own;
    },
    ready,
    natsUp: () => own?.isUp() ?? false,
    async forTenant(tenant) {
      const creds = opts.credsOf(tenant);
      if (creds === undefined) {
        if (!own?.isUp()) throw unavailable("NATS is unreachable");
        return own;
      }
      let pending = links.get(tenant);
      if (!pending) {
        pending = (async () => {
          const nc = await connect({
            servers: opts.natsUrl.split(","),
            name: `${opts.name}-${tenant}`,
            authenticator: credsAuthenticator(readFileSync(creds)),
            maxReconnectAttempts: -1,
            reconnectTimeWait: 250,
            timeout: 5_000,
          });
          return open(nc);
        })();
        links.set(tenant, pending);
        pending.catch((err: unknown) => {
          links.delete(tenant);
          logger.warn({ evt: "gateway_tenant_connect_failed", tenant, err }, "tenant connection failed");
        });
      }
      let link: TenantLink;
      try {
        link = await pending;
      } catch (err) {
        throw unavailable(`NATS is unreachable for tenant ${tenant} (${(err as Error).message})`);
      }
      if (!link.isUp()) throw unavailable(`NATS is unreachable for tenant ${tenant}`);
      return link;
    },
    all: () => [...opened],
    async close() {
      closed = true;
      abort.abort();
      await Promise.allSettled(links.values());
      for (const link of opened) {
        link.hubs.stopAll();
        await link.client.nc.drain().catch(() => undefined);
      }
    },
  };
}
