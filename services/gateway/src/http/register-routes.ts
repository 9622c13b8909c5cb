// Registers route specs on Fastify: the loopback guard and authentication as soon as the headers
// arrive (before any body is read), the NATS check, zod validation of params, query and body, and
// one JSON error shape for everything that goes wrong (Fastify's own errors included).
import { formatIssues } from "@fleet/protocol";
import type { FastifyError, FastifyInstance, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import type { z } from "zod";
import { type ApiError, apiError, excerpt, isApiError, toApiError } from "./api-error.js";
import { authenticate } from "./authenticate.js";
import { registerBodyParsers } from "./body-parsers.js";
import { fastifyErrorOf, sendError } from "./error-answers.js";
import { loopbackRefusal } from "./loopback-guard.js";
import { type AnyRouteSpec, isTextBody, type RouteOutput } from "./route-spec.js";
import { verifyTicket } from "./stream-ticket.js";
import type { Principal, TokenTable } from "./tokens-file.js";

export interface RouteDeps {
  tokens: TokenTable | undefined;
  /** Host names besides loopback ones that a gateway without tokens answers to (FLEET_GATEWAY_HOSTS). */
  allowedHosts: ReadonlySet<string>;
  /** Largest body of an authenticated request; others get UNAUTHENTICATED_BODY_LIMIT_BYTES. */
  bodyLimitBytes: number;
  /** False while the gateway has no working NATS connection for the tenant. */
  natsUp(tenant: string): boolean;
  logger: Logger;
  /** A request answered `storage_full`: JetStream refused its write (the gateway counts and logs it). */
  onStorageFull?: (route: string) => void;
  /** Browser origins allowed by CORS (FLEET_GATEWAY_CORS_ORIGINS): trusted by the loopback guard too. */
  corsOrigins?: ReadonlySet<string>;
  /** The key that signs stream tickets, and the clock that expires them (routes with `ticketAuth`). */
  tickets?: { key: Buffer; now: () => number };
}

/**
 * Largest body of a request that no route authenticated (public routes, unknown paths): Fastify's
 * default limit. Routes that take a body authenticate first and allow `bodyLimitBytes`.
 */
export const UNAUTHENTICATED_BODY_LIMIT_BYTES = 4 * 1024;

/** Issues of a failed validation quoted in the answer; each path and message is cut to an excerpt. */
const MAX_ISSUES = 5;

export function registerRoutes(app: FastifyInstance, routes: readonly AnyRouteSpec[], deps: RouteDeps): void {
  registerBodyParsers(app);
  app.setErrorHandler((err: FastifyError, request, reply) => {
    const e = fastifyErrorOf(err, request.routeOptions.bodyLimit);
    if (e.status >= 500)
      deps.logger.error({ evt: "http_error", err, route: request.routeOptions.url }, "request failed");
    void sendError(reply, e);
  });
  app.setNotFoundHandler((request, reply) => {
    const path = excerpt(request.url.split("?")[0] ?? "", 100);
    void sendError(reply, apiError(404, "not_found", `no route ${request.method} ${path}`));
  });
  if (!deps.tokens) {
    app.addHook("onRequest", async (request, reply) => {
      const refused = loopbackRefusal(
        {
          method: request.method,
          host: request.headers.host,
          origin: request.headers.origin,
          secFetchSite: header(request, "sec-fetch-site"),
        },
        deps.allowedHosts,
        deps.corsOrigins,
      );
      if (refused) return sendError(reply, refused);
    });
  }

  const principals = new WeakMap<FastifyRequest, Principal>();
  for (const route of routes) {
    app.route({
      method: route.method,
      url: route.url,
      ...(route.body ? { bodyLimit: deps.bodyLimitBytes } : {}),
      // Runs when the headers are in: a refused request's body is never read.
      onRequest: async (request, reply) => {
        const ticket = route.ticketAuth ? ticketOf(request) : undefined;
        const principal =
          ticket !== undefined && request.headers.authorization === undefined
            ? ticketPrincipal(ticket, request, deps)
            : authenticate(request.headers.authorization, request.socket.remoteAddress, deps.tokens, route.access);
        if (isApiError(principal)) return sendError(reply, principal);
        if (route.usesNats && !deps.natsUp(principal.tenant)) {
          return sendError(reply, apiError(503, "unavailable", "NATS is unreachable"));
        }
        principals.set(request, principal);
      },
      handler: async (request, reply) => {
        const principal = principals.get(request) as Principal;
        const params = check(route.params, request.params, "path");
        if (isApiError(params)) return sendError(reply, params);
        const query = check(route.query, request.query, "query");
        if (isApiError(query)) return sendError(reply, query);
        let body: unknown;
        if (route.body && isTextBody(route.body)) {
          if (typeof request.body !== "string") {
            return sendError(
              reply,
              apiError(400, "invalid", `the body must be text (${route.body.contentTypes.join(", ")})`),
            );
          }
          body = request.body;
        } else {
          body = check(route.body as z.ZodType | undefined, request.body ?? {}, "body");
          if (isApiError(body)) return sendError(reply, body);
        }
        let output: RouteOutput;
        try {
          output = await route.handler({ params, query, body, principal, request, reply } as never);
        } catch (err) {
          const e = toApiError(err);
          if (e.code === "storage_full") deps.onStorageFull?.(route.url);
          if (e.status >= 500 && e.status !== 503 && e.status !== 504) {
            deps.logger.error({ evt: "http_handler_failed", err, route: route.url }, "handler failed");
          }
          if (reply.sent || reply.raw.headersSent) return reply;
          return sendError(reply, e);
        }
        if ("hijacked" in output) return reply;
        if (isApiError(output)) return sendError(reply, output);
        for (const [name, value] of Object.entries(output.headers ?? {})) reply.header(name, value);
        if ("json" in output) return reply.code(output.status).type("application/json").send(output.json);
        if ("bytes" in output)
          return reply.code(output.status).type(output.contentType).send(Buffer.from(output.bytes));
        return reply.code(output.status).type(output.contentType).send(output.text);
      },
    });
  }
}

/** The `ticket` query parameter of a request, if it has one. */
function ticketOf(request: FastifyRequest): string | undefined {
  const value = (request.query as Record<string, unknown> | undefined)?.ticket;
  return typeof value === "string" ? value : undefined;
}

/**
 * The principal a stream ticket grants (read, its tenant) for the route's session (`:id`), or a
 * 401. Without a tokens file the request must also come from a loopback client.
 */
function ticketPrincipal(ticket: string, request: FastifyRequest, deps: RouteDeps): Principal | ApiError {
  if (!deps.tokens) {
    const local = authenticate(undefined, request.socket.remoteAddress, undefined, "read");
    if (isApiError(local)) return local;
  }
  if (!deps.tickets) return apiError(401, "unauthorized", "this gateway issues no stream tickets");
  const sessionId = String((request.params as Record<string, unknown> | undefined)?.id ?? "");
  const verdict = verifyTicket(ticket, deps.tickets.key, sessionId, deps.tickets.now());
  if (!verdict.ok) return apiError(401, "unauthorized", verdict.reason);
  return { tenant: verdict.tenant, role: "read" };
}

const header = (request: FastifyRequest, name: string): string | undefined => {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/** The parsed value, or a 400 quoting at most MAX_ISSUES issues, each cut to an excerpt. */
function check(schema: z.ZodType | undefined, value: unknown, where: string): unknown {
  if (!schema) return undefined;
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issues = formatIssues(result.error.issues);
  const detail = issues
    .slice(0, MAX_ISSUES)
    .map((i) => (i.path ? `${excerpt(i.path, 100)}: ${excerpt(i.message, 200)}` : excerpt(i.message, 200)))
    .join("; ");
  const more = issues.length > MAX_ISSUES ? ` (and ${issues.length - MAX_ISSUES} more issues)` : "";
  return apiError(400, "invalid", `${where}: ${detail}${more}`);
}
