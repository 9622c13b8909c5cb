// `GET /v1/sessions/{id}/events`: the session's events as Server-Sent Events, resumable by sequence.
import { decodeEvent } from "@fleet/protocol";
import { EventsQuery, SessionParams } from "../api-schemas.js";
import { apiError } from "../http/api-error.js";
import { corsHeadersOf } from "../http/cors.js";
import { type AnyRouteSpec, defineRoute } from "../http/route-spec.js";
import { encodeFrame, eventFrameParts, resumeAfter } from "../sse/frame.js";
import { SseConnection } from "../sse/sse-connection.js";
import type { TenantLink } from "../tenant-links.js";
import type { RouteContext } from "./route-context.js";

const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache, no-transform",
  connection: "keep-alive",
  "x-accel-buffering": "no",
};

export function eventRoutes(ctx: RouteContext, connections: Set<SseConnection>): AnyRouteSpec[] {
  return [
    defineRoute({
      method: "GET",
      url: "/v1/sessions/:id/events",
      operationId: "streamEvents",
      summary: "The session's events as Server-Sent Events, resumable by stream sequence",
      description:
        "Each frame is `id: <stream sequence>`, `event: <event type>`, `data: <the event JSON>`. The stream resumes after `Last-Event-ID` (what EventSource sends on reconnect), else after `?after=`; `?follow=false` ends at the current end of the log. A `:` comment line comes every 15 s. A client that falls too far behind is disconnected and resumes with `Last-Event-ID`. A browser's EventSource, which cannot send `Authorization`, passes a stream ticket instead: `?ticket=` (`POST /v1/sessions/{id}/events/ticket`).",
      tag: "events",
      access: "read",
      usesNats: true,
      ticketAuth: true,
      params: SessionParams,
      query: EventsQuery,
      responses: {
        200: {
          description: "An SSE stream; every `data:` is one FleetEvent (see the FleetEvent schema)",
          contentType: "text/event-stream",
        },
        404: { description: "No such session" },
      },
      async handler({ params, query, principal, request, reply }) {
        const header = request.headers["last-event-id"];
        const after = resumeAfter(Array.isArray(header) ? header[0] : header, query.after);
        if (after === "invalid") return apiError(400, "invalid", "Last-Event-ID must be a stream sequence");
        const link = await ctx.links.forTenant(principal.tenant);
        const follow = query.follow ?? true;
        const sessionId = params.id;
        // The session exists when it has a running hub (hubs start only for existing sessions) or events.
        const last = link.hubs.get(sessionId) ? undefined : await link.client.lastSeq(sessionId);
        if (last === 0) return apiError(404, "not_found", `session ${sessionId} does not exist`);

        reply.hijack();
        const res = reply.raw;
        // HTTP/1.1 bodies are chunked (set here, so the connection knows how to frame its writes);
        // an HTTP/1.0 client gets the bare stream, ended by closing the connection.
        const chunked = request.raw.httpVersionMajor > 1 || request.raw.httpVersionMinor >= 1;
        // The raw response does not carry the reply's headers: CORS's are copied.
        const headers = { ...SSE_HEADERS, ...corsHeadersOf(reply.getHeaders()) };
        res.writeHead(
          200,
          chunked ? { ...headers, "transfer-encoding": "chunked" } : { ...headers, connection: "close" },
        );
        res.flushHeaders();
        const log = ctx.logger.child({ sessionId, after, follow });
        let leave: () => void = () => undefined;
        const connection: SseConnection = new SseConnection(res, {
          after,
          chunked,
          maxBufferBytes: ctx.sseBufferBytes,
          onClose: (reason) => {
            connections.delete(connection);
            ctx.metrics.sseClients.dec();
            if (reason === "slow") {
              ctx.metrics.sseDropped.inc();
              log.info({ evt: "gateway_sse_dropped", lastSeq: connection.lastSeq }, "dropped a slow SSE client");
            }
            leave();
          },
        });
        connections.add(connection);
        ctx.metrics.sseClients.inc();
        void (async () => {
          try {
            if (!follow) {
              await writeHistory(
                link,
                connection,
                sessionId,
                after + 1,
                last ?? (await link.client.lastSeq(sessionId)),
              );
              connection.end();
              return;
            }
            const { hub, joinSeq } = await link.hubs.join(sessionId, connection);
            leave = () => link.hubs.leave(hub, connection);
            if (connection.closed) return leave();
            await writeHistory(link, connection, sessionId, after + 1, joinSeq - 1);
            connection.goLive();
          } catch (err) {
            log.warn({ evt: "gateway_sse_failed", err }, "SSE stream failed");
            connection.drop();
          }
        })();
        return { hijacked: true };
      },
    }),
  ];
}

/** Messages per pull when a long history is read (a 10,000-event log reads in 5 pulls, not 20). */
const HISTORY_PULL = 2048;
/** History frames are written in batches of about this many bytes (one socket write each). */
const HISTORY_BATCH_BYTES = 64 * 1024;

/**
 * Writes the session's events `from`..`to` (inclusive) with backpressure; stops when the client left.
 * Frames go out in batches: 10,000 frames written one by one cost 10,000 socket writes and chunks.
 */
async function writeHistory(
  link: TenantLink,
  connection: SseConnection,
  sessionId: string,
  from: number,
  to: number,
): Promise<void> {
  if (from > to) return;
  const records = link.client.history(sessionId, { fromSeq: from, toSeq: to, batch: HISTORY_PULL });
  let batch: Array<string | Uint8Array> = [];
  let batchBytes = 0;
  let batchSeq = 0;
  for await (const record of records) {
    if (connection.closed) return;
    const decoded = decodeEvent(record.data);
    if (!decoded.ok) continue;
    batch.push(...eventFrameParts(record.seq, decoded.value, record.data));
    batchBytes += record.data.byteLength;
    batchSeq = record.seq;
    if (batchBytes >= HISTORY_BATCH_BYTES) {
      await connection.history(batchSeq, encodeFrame(batch));
      batch = [];
      batchBytes = 0;
    }
  }
  if (batch.length > 0 && !connection.closed) await connection.history(batchSeq, encodeFrame(batch));
}
