// `GET /v1/changes` (PROTOCOL change 49): the tenant's change feed as Server-Sent Events, and the
// ticket a browser's EventSource opens it with. Views refresh from the store's indexes on a frame
// instead of polling.
import type { ServerResponse } from "node:http";
import type { ChangeBatch } from "@fleet/client";
import { z } from "zod";
import { corsHeadersOf } from "../http/cors.js";
import { type AnyRouteSpec, defineRoute } from "../http/route-spec.js";
import { issueTicket } from "../http/stream-ticket.js";
import { commentFrame } from "../sse/frame.js";
import type { RouteContext } from "./route-context.js";
import { StreamTicket, type TicketSettings } from "./stream-ticket.js";

const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache, no-transform",
  connection: "keep-alive",
  "x-accel-buffering": "no",
};

/** A client that leaves this many bytes unread is dropped (frames are small: it is gone or stuck). */
const MAX_UNREAD_BYTES = 256 * 1024;

const ChangesFrame = z.object({ sessions: z.array(z.string()), approvals: z.boolean(), all: z.boolean() });

/** One `changes` frame. */
export const changesFrame = (batch: ChangeBatch): string =>
  `event: changes\ndata: ${JSON.stringify(ChangesFrame.parse(batch))}\n\n`;

export function changeRoutes(ctx: RouteContext, tickets: TicketSettings): AnyRouteSpec[] {
  return [
    defineRoute({
      method: "POST",
      url: "/v1/changes/ticket",
      operationId: "issueChangesTicket",
      summary: "A short-lived ticket that opens the change feed without an Authorization header",
      description:
        "For EventSource: `new EventSource(url)` with the answer's `url` (`/v1/changes?ticket=…`). Signed like a session's stream ticket; it grants the token's tenant's change feed and nothing else, and opens or reopens it until `expiresAt`. Needs the `read` role.",
      tag: "events",
      access: "read",
      usesNats: false,
      responses: { 201: { description: "The ticket", schema: StreamTicket } },
      async handler({ principal }) {
        const expiresAt = tickets.now() + tickets.ttlMs;
        // A ticket for no session: it can open no session's stream, only this feed.
        const ticket = issueTicket({ tenant: principal.tenant, sessionId: "", expiresAt }, tickets.key);
        return { status: 201, json: { ticket, expiresAt, url: `/v1/changes?ticket=${encodeURIComponent(ticket)}` } };
      },
    }),
    defineRoute({
      method: "GET",
      url: "/v1/changes",
      operationId: "streamChanges",
      summary: "The tenant's change feed: which sessions changed and whether approvals may have, as Server-Sent Events",
      description:
        "Live only, from when the stream opens. Each frame is `event: changes`, `data: {sessions, approvals, all}`: the sessions whose changes the store's indexes took in (or that were deleted, archived or restored) in the last window (at most one frame per 250 ms), and `approvals: true` when an approval may have been asked for, answered or dropped. `all: true` (with no sessions) means anything may differ: a store started applying a stream group or switched to a rebuilt namespace, the gateway's NATS connection was down and may have missed notices, or more than 1,000 sessions changed in the window; a view then loads everything it shows again. A `:` comment line comes every 15 s. A view refreshes what it shows from the indexes (`GET /v1/approvals`, `GET /v1/sessions`) when the stream opens and on a frame that concerns it, never on a timer. A browser's EventSource passes a ticket: `?ticket=` (`POST /v1/changes/ticket`).",
      tag: "events",
      access: "read",
      usesNats: true,
      ticketAuth: true,
      responses: {
        200: { description: "An SSE stream of `changes` frames", contentType: "text/event-stream" },
      },
      async handler({ principal, reply }) {
        const link = await ctx.links.forTenant(principal.tenant);
        reply.hijack();
        const res: ServerResponse = reply.raw;
        const log = ctx.logger.child({ tenant: principal.tenant });
        let heartbeat: NodeJS.Timeout | undefined;
        let leave: () => void = () => undefined;
        const close = () => {
          clearInterval(heartbeat);
          leave();
          if (!res.writableEnded) res.end();
        };
        const write = (text: string) => {
          if (res.writableEnded) return;
          if (res.writableLength > MAX_UNREAD_BYTES) {
            log.info({ evt: "gateway_changes_dropped" }, "dropped a change feed client that does not read");
            close();
            return;
          }
          res.write(text);
        };
        // Subscribed before the stream opens: a client that loads its view on open misses nothing.
        leave = link.changes.join((batch) => write(changesFrame(batch)));
        await link.client.nc.flush().catch(() => undefined);
        res.writeHead(200, { ...SSE_HEADERS, ...corsHeadersOf(reply.getHeaders()) });
        res.flushHeaders();
        write(commentFrame("changes"));
        heartbeat = setInterval(() => write(commentFrame("ping")), ctx.keepaliveMs);
        res.on("close", close);
        return { hijacked: true };
      },
    }),
  ];
}
