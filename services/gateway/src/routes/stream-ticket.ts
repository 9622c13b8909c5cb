// `POST /v1/sessions/{id}/events/ticket`: a short-lived ticket to open the session's event stream
// without an Authorization header (a browser's EventSource).
import { z } from "zod";
import { SessionParams } from "../api-schemas.js";
import { apiError } from "../http/api-error.js";
import { type AnyRouteSpec, defineRoute } from "../http/route-spec.js";
import { issueTicket } from "../http/stream-ticket.js";
import type { RouteContext } from "./route-context.js";

export const StreamTicket = z.object({
  /** Pass as `?ticket=` to `GET /v1/sessions/{id}/events`. */
  ticket: z.string(),
  /** Until when (ms since the epoch) it opens, or reopens, the stream. */
  expiresAt: z.number().int(),
  /** The stream's path with the ticket, relative to the gateway. */
  url: z.string(),
});

export interface TicketSettings {
  key: Buffer;
  ttlMs: number;
  now: () => number;
}

export function streamTicketRoutes(ctx: RouteContext, tickets: TicketSettings): AnyRouteSpec[] {
  return [
    defineRoute({
      method: "POST",
      url: "/v1/sessions/:id/events/ticket",
      operationId: "issueStreamTicket",
      summary: "A short-lived ticket that opens this session's event stream without an Authorization header",
      description:
        "For EventSource, which cannot send headers: `new EventSource(url)` with the answer's `url` (`/v1/sessions/{id}/events?ticket=…`, add `&after=` to resume). The ticket is signed by the gateway (HMAC-SHA256; gateways behind one address share FLEET_GATEWAY_TICKET_KEY), grants reading this session's events to the token's tenant and nothing else, and opens or reopens the stream until `expiresAt` (FLEET_GATEWAY_TICKET_TTL_MS, default 60 s); a stream opened before then stays open. Needs the `read` role.",
      tag: "events",
      access: "read",
      usesNats: true,
      params: SessionParams,
      responses: {
        201: { description: "The ticket", schema: StreamTicket },
        404: { description: "No such session" },
      },
      async handler({ params, principal }) {
        const link = await ctx.links.forTenant(principal.tenant);
        if ((await link.client.lastSeq(params.id)) === 0) {
          return apiError(404, "not_found", `session ${params.id} does not exist`);
        }
        const expiresAt = tickets.now() + tickets.ttlMs;
        const ticket = issueTicket({ tenant: principal.tenant, sessionId: params.id, expiresAt }, tickets.key);
        const url = `/v1/sessions/${encodeURIComponent(params.id)}/events?ticket=${encodeURIComponent(ticket)}`;
        return { status: 201, json: { ticket, expiresAt, url } };
      },
    }),
  ];
}
