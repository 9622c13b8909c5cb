// AG-UI: `POST /v1/agui` runs an agent turn on a thread (a session) and answers with its AG-UI event
// stream; `GET /v1/agui/{threadId}` resumes a dropped stream after `Last-Event-ID`.
import type { RunAgentInput } from "@ag-ui/core";
import { EventEncoder } from "@ag-ui/encoder";
import { isFleetError, type OutcomeRecord } from "@fleet/client";
import { SessionId } from "@fleet/protocol";
import type { FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { type AguiCursor, advanceCursor, aguiCursor, type OutFrame, parseFrameId } from "../agui/agui-cursor.js";
import { type AguiFold, type AguiFoldCache, createAguiFoldCache } from "../agui/agui-fold-cache.js";
import { AguiRunInput, commandsOfInput } from "../agui/agui-input.js";
import { aguiCommandId, initialAguiProjection, stepAgui } from "../agui/agui-projection.js";
import { apiError, isApiError } from "../http/api-error.js";
import { corsHeadersOf } from "../http/cors.js";
import { type AnyRouteSpec, defineRoute, type RouteOutput } from "../http/route-spec.js";
import { commentFrame } from "../sse/frame.js";
import type { TenantLink } from "../tenant-links.js";
import type { RouteContext } from "./route-context.js";

const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache, no-transform",
  connection: "keep-alive",
  "x-accel-buffering": "no",
};

const ThreadParams = z.object({ threadId: SessionId });
const ResumeQuery = z.object({
  /** A frame id (`<seq>` or `<seq>.<k>`) to resume after, when `Last-Event-ID` is not sent. */
  after: z.string().max(32).optional(),
});

const STREAM_DESCRIPTION =
  "Every frame is `id: <frame id>` and `data: <one AG-UI event>`: the frames of one Fleet event are `<seq>.1`, `<seq>.2`, … and its last frame `<seq>` (the event's stream sequence).";

/** Threads whose AG-UI fold is kept between streams (each about the size of its open run's state). */
const FOLD_CACHE_ENTRIES = 256;

export function aguiRoutes(ctx: RouteContext): AnyRouteSpec[] {
  const folds = createAguiFoldCache(FOLD_CACHE_ENTRIES);
  return [
    defineRoute({
      method: "POST",
      url: "/v1/agui",
      operationId: "runAgui",
      summary: "Run an agent turn on a thread (AG-UI RunAgentInput) and stream it as AG-UI events",
      description: `The body is AG-UI's RunAgentInput: \`threadId\` is the session (created by the first run), the last message is the new user message (the session's log keeps the transcript; earlier messages, \`tools\`, \`context\`, \`state\` and \`forwardedProps\` are not used), and \`resume[]\` answers the interrupts (tool approvals) that ended the previous run instead (a decision the loop refuses, on a call that waits for none, is the run's RUN_ERROR). The answer is the run's AG-UI events as Server-Sent Events, from RUN_STARTED to RUN_FINISHED or RUN_ERROR. ${STREAM_DESCRIPTION} A dropped stream resumes with \`GET /v1/agui/{threadId}\` and \`Last-Event-ID\`.`,
      tag: "agui",
      access: "operate",
      usesNats: true,
      body: AguiRunInput,
      responses: {
        200: { description: "An SSE stream of AG-UI events (one run)", contentType: "text/event-stream" },
        504: { description: "The command's outcome did not arrive in time" },
      },
      async handler({ body, principal, request, reply }) {
        const input = body as unknown as RunAgentInput;
        const link = await ctx.links.forTenant(principal.tenant);
        const sessionId = input.threadId;
        const commands = commandsOfInput(input);
        if (isApiError(commands)) return commands;
        let first: OutcomeRecord | undefined;
        for (const [k, command] of commands.entries()) {
          try {
            const outcome = await link.client.outcomeOf(sessionId, command, {
              commandId: aguiCommandId(input.runId, k),
              timeoutMs: ctx.commandTimeoutMs,
            });
            ctx.metrics.commands.inc({ type: command.type, outcome: outcome.event.type });
            first ??= outcome;
            if (outcome.event.type === "command_rejected") break;
          } catch (err) {
            if (!(isFleetError(err) && err.kind === "timeout")) throw err;
            if (first) break;
            return apiError(
              504,
              "timeout",
              "the command's outcome did not arrive in time; send the run again (same runId) for its answer",
            );
          }
        }
        if (!first) return apiError(400, "invalid", "body: nothing to run");
        const after = { seq: first.seq - 1, k: Number.POSITIVE_INFINITY };
        const key = `${principal.tenant}/${sessionId}`;
        const fold = await folds.get(link.client, key, sessionId, after);
        return stream(ctx, link, { key, sessionId, folds, fold }, aguiCursor(after, "next"), { request, reply });
      },
    }),
    defineRoute({
      method: "GET",
      url: "/v1/agui/:threadId",
      operationId: "resumeAgui",
      summary: "Resume a thread's AG-UI stream after Last-Event-ID",
      description: `Streams the AG-UI events after \`Last-Event-ID\` (else \`?after=\`, else from the thread's start) of the run the named frame belongs to, through its RUN_FINISHED or RUN_ERROR; when that frame ended its run (or names none), the next run to start. Without gap or duplicate: every frame after the one named, once. ${STREAM_DESCRIPTION}`,
      tag: "agui",
      access: "read",
      usesNats: true,
      params: ThreadParams,
      query: ResumeQuery,
      responses: {
        200: { description: "An SSE stream of AG-UI events (the rest of one run)", contentType: "text/event-stream" },
        404: { description: "No such thread" },
      },
      async handler({ params, query, principal, request, reply }) {
        const header = request.headers["last-event-id"];
        const raw = (Array.isArray(header) ? header[0] : header)?.trim() || query.after || "0";
        const after = parseFrameId(raw);
        if (after === "invalid")
          return apiError(400, "invalid", "Last-Event-ID must be a frame id: <seq> or <seq>.<k>");
        const link = await ctx.links.forTenant(principal.tenant);
        if ((await link.client.lastSeq(params.threadId)) === 0) {
          return apiError(404, "not_found", `thread ${params.threadId} does not exist`);
        }
        const key = `${principal.tenant}/${params.threadId}`;
        const fold = await folds.get(link.client, key, params.threadId, after);
        const cursor = { ...aguiCursor(after, "resume"), last: fold?.last ?? null };
        return stream(ctx, link, { key, sessionId: params.threadId, folds, fold }, cursor, { request, reply });
      },
    }),
  ];
}

/** A thread, its cached fold (where the stream starts folding) and the cache the stream's fold goes to. */
interface Thread {
  key: string;
  sessionId: string;
  folds: AguiFoldCache;
  fold: AguiFold | undefined;
}

/**
 * Writes the frames the cursor selects, folding the thread's log from the cached fold, else from
 * its first event (the projection is a fold of the whole log, so a resumed stream names the same
 * frames by the same ids), until the followed run ends or the client goes away; then keeps its fold.
 */
function stream(
  ctx: RouteContext,
  link: TenantLink,
  thread: Thread,
  start: AguiCursor,
  http: { request: FastifyRequest; reply: FastifyReply },
): RouteOutput {
  const { sessionId } = thread;
  const { reply } = http;
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, { ...SSE_HEADERS, ...corsHeadersOf(reply.getHeaders()) });
  res.flushHeaders();
  const encoder = new EventEncoder();
  const abort = new AbortController();
  // The client may have gone while the command was sent: then its `close` has already fired.
  const gone = () => res.destroyed || !res.socket || res.socket.destroyed;
  res.on("close", () => abort.abort());
  if (gone()) abort.abort();
  ctx.metrics.sseClients.inc();
  const keepalive = setInterval(() => res.write(commentFrame("keepalive")), ctx.keepaliveMs);
  keepalive.unref();
  const log = ctx.logger.child({ sessionId, route: "agui" });
  const encode = (out: readonly OutFrame[]) =>
    out.map(({ id, frame }) => `id: ${id}\n${encoder.encodeSSE(frame.event)}`).join("");

  void (async () => {
    let fold: AguiFold = thread.fold ?? { seq: 0, projection: initialAguiProjection(sessionId), last: null };
    let cursor = start;
    try {
      const from = fold.seq + 1;
      const events = abort.signal.aborted ? [] : link.client.events(sessionId, { from, signal: abort.signal });
      for await (const { seq, event } of events) {
        const step = stepAgui(fold.projection, event);
        const lastFrame = step.frames.at(-1);
        fold = {
          seq,
          projection: step.projection,
          last: lastFrame ? { run: lastFrame.run, terminal: lastFrame.terminal } : fold.last,
        };
        const advanced = advanceCursor(cursor, seq, step.frames);
        cursor = advanced.cursor;
        if (advanced.out.length > 0 && !res.write(encode(advanced.out))) {
          await new Promise<void>((resolve) => {
            if (gone()) return resolve();
            res.once("drain", resolve);
            res.once("close", resolve);
          });
        }
        if (cursor.done || abort.signal.aborted) break;
      }
    } catch (err) {
      if (!abort.signal.aborted) log.warn({ evt: "gateway_agui_failed", err }, "AG-UI stream failed");
    } finally {
      if (fold.seq > 0) thread.folds.put(thread.key, fold);
      ctx.metrics.sseClients.dec();
      clearInterval(keepalive);
      abort.abort();
      if (!res.destroyed) res.end();
    }
  })();
  return { hijacked: true };
}
