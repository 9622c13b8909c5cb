// A scripted fake of Anthropic's Messages API (POST /v1/messages) over node:http, streaming real SSE.

import { EventEmitter } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { buildMessage, buildSseEvents, encodeSseEvent, errorBody, type SseEvent } from "./fake-anthropic-events.js";
import {
  type FakeMessageReply,
  type FakeReply,
  type FakeResponder,
  MessagesRequestBody,
  type RecordedRequest,
  type RequestOutcome,
} from "./fake-anthropic-types.js";
import {
  FAKE_HOST,
  formatIssue,
  listenFake,
  parseJson,
  publicHeaders,
  readAuth,
  readBody,
  sendJson,
  sleepUnlessClosed,
  waitForChange,
} from "./fake-http.js";

/** Options of `startFakeAnthropic`. */
export interface FakeAnthropicOptions {
  /** Default a free port. */
  readonly port?: number;
  /** When set, only this key is accepted (else any non-empty key); a mismatch is answered with 401. */
  readonly apiKey?: string;
}

/**
 * A running fake owned by the caller. Replies are taken in order from the scripted queue; when it is empty the
 * `respondWith` responder answers; when there is none either, the request gets a 500 `api_error` naming the
 * request index (so an unscripted call fails the test loudly).
 * Contract: `stop()` is idempotent and destroys open connections (a stalled stream ends as `server_closed`).
 */
export interface FakeAnthropic {
  /** `http://127.0.0.1:<port>`: pass as the SDK's `baseURL`. */
  readonly url: string;
  readonly port: number;
  /** Every request in arrival order, including rejected ones (live array; `reset()` empties it). */
  readonly requests: readonly RecordedRequest[];
  /** Appends replies (or per-request responders) to the queue. */
  script(...replies: readonly (FakeReply | FakeResponder)[]): void;
  /** Sets (or clears) the responder used when the queue is empty. */
  respondWith(responder: FakeResponder | undefined): void;
  /** Number of scripted replies not yet consumed. */
  pendingReplies(): number;
  /** Resolves with request `index` once it has arrived; rejects after `timeoutMs` (default 5000). */
  waitForRequest(index: number, timeoutMs?: number): Promise<RecordedRequest>;
  /** Resolves once request `index`'s response has ended (completed or closed); rejects after `timeoutMs`. */
  waitForOutcome(index: number, timeoutMs?: number): Promise<Exclude<RequestOutcome, "pending">>;
  /** Clears the queue, the fallback responder and the recorded requests. */
  reset(): void;
  stop(): Promise<void>;
}

/** Starts the fake on 127.0.0.1 and resolves once it is listening. */
export async function startFakeAnthropic(opts: FakeAnthropicOptions = {}): Promise<FakeAnthropic> {
  const requests: RecordedRequest[] = [];
  const queue: (FakeReply | FakeResponder)[] = [];
  const changes = new EventEmitter();
  changes.setMaxListeners(0);
  let fallback: FakeResponder | undefined;

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (res.headersSent) res.destroy();
      else sendJson(res, 500, errorBody("api_error", `fake-anthropic: ${String(error)}`));
    });
  });

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const text = await readBody(req);
    const rawBody = parseJson(text);
    const parsed = MessagesRequestBody.safeParse(rawBody);
    const { auth, apiKey } = readAuth(req);
    const record: RecordedRequest = {
      index: requests.length,
      method: req.method ?? "",
      path: (req.url ?? "").split("?")[0] ?? "",
      headers: publicHeaders(req),
      auth,
      apiKey,
      rawBody,
      body: parsed.success ? parsed.data : undefined,
      stream: parsed.success && parsed.data.stream === true,
      outcome: "pending",
      eventsWritten: 0,
    };
    requests.push(record);
    const setOutcome = (outcome: RequestOutcome): void => {
      if (record.outcome !== "pending") return;
      record.outcome = outcome;
      changes.emit("change");
    };
    res.on("close", () =>
      setOutcome(res.writableFinished ? "completed" : listening.isStopping() ? "server_closed" : "client_closed"),
    );
    res.setHeader("request-id", `req_fake_${record.index}`);
    changes.emit("change");

    if (record.method !== "POST" || record.path !== "/v1/messages") {
      return sendJson(
        res,
        404,
        errorBody("not_found_error", `fake-anthropic: no route ${record.method} ${record.path}`),
      );
    }
    if (auth === "none" || apiKey === undefined || apiKey === "") {
      return sendJson(
        res,
        401,
        errorBody("authentication_error", "x-api-key or Authorization: Bearer header is required"),
      );
    }
    if (opts.apiKey !== undefined && apiKey !== opts.apiKey) {
      return sendJson(res, 401, errorBody("authentication_error", "invalid x-api-key"));
    }
    if (!parsed.success || record.body === undefined) {
      const detail =
        rawBody === undefined ? "body is not valid JSON" : parsed.error?.issues.map(formatIssue).join("; ");
      return sendJson(res, 400, errorBody("invalid_request_error", `fake-anthropic: ${detail}`));
    }

    let reply: FakeReply;
    try {
      const next = queue.shift() ?? fallback;
      if (next === undefined) {
        return sendJson(
          res,
          500,
          errorBody("api_error", `fake-anthropic: no scripted reply for request #${record.index}`),
        );
      }
      reply = typeof next === "function" ? next(record) : next;
    } catch (error) {
      return sendJson(res, 500, errorBody("api_error", `fake-anthropic: responder threw: ${String(error)}`));
    }
    if (reply.type === "http_error") {
      const headers = {
        ...reply.headers,
        ...(reply.retryAfter === undefined ? {} : { "retry-after": String(reply.retryAfter) }),
      };
      return sendJson(res, reply.status, errorBody(reply.errorType, reply.message), headers);
    }
    const ctx = { index: record.index, body: record.body };
    let events: SseEvent[];
    try {
      if (!record.stream) return sendJson(res, 200, buildMessage(reply, ctx), reply.headers);
      events = buildSseEvents(reply, ctx);
    } catch (error) {
      return sendJson(res, 500, errorBody("api_error", `fake-anthropic: invalid script: ${String(error)}`));
    }
    await writeStream(res, reply, events, record);
  };

  const writeStream = async (
    res: ServerResponse,
    reply: FakeMessageReply,
    events: readonly SseEvent[],
    record: RecordedRequest,
  ): Promise<void> => {
    res.writeHead(200, {
      ...reply.headers,
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      connection: "keep-alive",
    });
    res.flushHeaders();
    const errorAt = reply.errorAfterEvents?.events;
    for (let i = 0; i <= events.length; i++) {
      if (res.destroyed) return;
      if (i === errorAt && reply.errorAfterEvents !== undefined) {
        const { errorType, message } = reply.errorAfterEvents;
        res.end(encodeSseEvent({ event: "error", data: errorBody(errorType, message) }));
        return;
      }
      if (i === reply.stallAfterEvents) return; // keep the connection open; client abort or stop() closes it
      const event = events[i];
      if (event === undefined) break;
      if (i > 0 && reply.eventDelayMs !== undefined && reply.eventDelayMs > 0) {
        await sleepUnlessClosed(res, reply.eventDelayMs);
        if (res.destroyed) return;
      }
      res.write(encodeSseEvent(event));
      record.eventsWritten++;
    }
    res.end();
  };

  const listening = await listenFake(server, "fake-anthropic", opts.port);
  const { port, stop } = listening;
  const waitFor = <T>(what: string, timeoutMs: number, probe: () => T | undefined): Promise<T> =>
    waitForChange(changes, "fake-anthropic", what, timeoutMs, probe);

  return {
    url: `http://${FAKE_HOST}:${port}`,
    port,
    requests,
    script: (...replies) => {
      queue.push(...replies);
    },
    respondWith: (responder) => {
      fallback = responder;
    },
    pendingReplies: () => queue.length,
    waitForRequest: (index, timeoutMs = 5000) => waitFor(`request #${index}`, timeoutMs, () => requests[index]),
    waitForOutcome: (index, timeoutMs = 5000) =>
      waitFor(`the end of request #${index}`, timeoutMs, () => {
        const outcome = requests[index]?.outcome;
        return outcome === undefined || outcome === "pending" ? undefined : outcome;
      }),
    reset: () => {
      queue.length = 0;
      requests.length = 0;
      fallback = undefined;
    },
    stop,
  };
}
