// A scripted fake of OpenAI's streaming APIs over node:http: Chat Completions (POST /v1/chat/completions,
// what vLLM, Ollama, OpenRouter… speak) and Responses (POST /v1/responses).

import { EventEmitter } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { SseEvent } from "./fake-anthropic-events.js";
import {
  FAKE_HOST,
  formatIssue,
  listenFake,
  parseJson,
  publicHeaders,
  type RequestOutcome,
  readAuth,
  readBody,
  sendJson,
  sleepUnlessClosed,
  waitForChange,
} from "./fake-http.js";
import {
  buildChatChunks,
  buildResponsesEvents,
  encodeOpenAIEvent,
  openAIErrorBody,
  streamErrorEvent,
} from "./fake-openai-events.js";
import {
  type FakeOpenAIAnswer,
  type FakeOpenAIApi,
  type FakeOpenAIReply,
  type FakeOpenAIResponder,
  OpenAIRequestBody,
  type RecordedOpenAIRequest,
} from "./fake-openai-types.js";

const FAKE = "fake-openai";

export interface FakeOpenAIOptions {
  /** Default a free port. */
  readonly port?: number;
  /** When set, only this key is accepted (else any non-empty key); a mismatch is answered with 401. */
  readonly apiKey?: string;
}

/**
 * A running fake owned by the caller, like `FakeAnthropic`: answers are taken in order from the
 * scripted queue, then from the `respondWith` responder, else a 500 naming the request index. The same
 * scripted reply is rendered in whichever protocol the request spoke. Only streaming requests are served
 * (`stream: true`; others get a 400).
 * Contract: `stop()` is idempotent and destroys open connections.
 */
export interface FakeOpenAI {
  /** `http://127.0.0.1:<port>/v1`: the `baseURL` of the SDK, a models.json `baseUrl`. */
  readonly url: string;
  readonly port: number;
  /** Every request in arrival order (live array; `reset()` empties it). */
  readonly requests: readonly RecordedOpenAIRequest[];
  script(...answers: readonly (FakeOpenAIAnswer | FakeOpenAIResponder)[]): void;
  respondWith(responder: FakeOpenAIResponder | undefined): void;
  pendingReplies(): number;
  waitForRequest(index: number, timeoutMs?: number): Promise<RecordedOpenAIRequest>;
  waitForOutcome(index: number, timeoutMs?: number): Promise<Exclude<RequestOutcome, "pending">>;
  reset(): void;
  stop(): Promise<void>;
}

const ROUTES: Readonly<Record<string, FakeOpenAIApi>> = {
  "/v1/chat/completions": "chat",
  "/chat/completions": "chat",
  "/v1/responses": "responses",
  "/responses": "responses",
};

/** Starts the fake on 127.0.0.1 and resolves once it is listening. */
export async function startFakeOpenAI(opts: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  const requests: RecordedOpenAIRequest[] = [];
  const queue: (FakeOpenAIAnswer | FakeOpenAIResponder)[] = [];
  const changes = new EventEmitter();
  changes.setMaxListeners(0);
  let fallback: FakeOpenAIResponder | undefined;

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (res.headersSent) res.destroy();
      else sendJson(res, 500, openAIErrorBody(`${FAKE}: ${String(error)}`, "server_error"));
    });
  });

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const rawBody = parseJson(await readBody(req));
    const parsed = OpenAIRequestBody.safeParse(rawBody);
    const path = (req.url ?? "").split("?")[0] ?? "";
    const record: RecordedOpenAIRequest = {
      index: requests.length,
      method: req.method ?? "",
      path,
      api: ROUTES[path],
      headers: publicHeaders(req),
      ...readAuth(req),
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
    res.setHeader("x-request-id", `req_fake_${record.index}`);
    changes.emit("change");

    const api = record.api;
    if (record.method !== "POST" || api === undefined) {
      return sendJson(res, 404, openAIErrorBody(`${FAKE}: no route ${record.method} ${path}`));
    }
    if (record.auth !== "bearer" || !record.apiKey || (opts.apiKey !== undefined && record.apiKey !== opts.apiKey)) {
      return sendJson(
        res,
        401,
        openAIErrorBody("Incorrect API key provided", "invalid_request_error", "invalid_api_key"),
      );
    }
    if (!record.body) {
      const detail =
        rawBody === undefined ? "body is not valid JSON" : parsed.error?.issues.map(formatIssue).join("; ");
      return sendJson(res, 400, openAIErrorBody(`${FAKE}: ${detail}`));
    }
    if (!record.stream) return sendJson(res, 400, openAIErrorBody(`${FAKE}: only stream: true is served`));

    let answer: FakeOpenAIAnswer;
    try {
      const next = queue.shift() ?? fallback;
      if (next === undefined) {
        return sendJson(
          res,
          500,
          openAIErrorBody(`${FAKE}: no scripted reply for request #${record.index}`, "server_error"),
        );
      }
      answer = typeof next === "function" ? next(record) : next;
    } catch (error) {
      return sendJson(res, 500, openAIErrorBody(`${FAKE}: responder threw: ${String(error)}`, "server_error"));
    }
    if (answer.type === "http_error") {
      const headers: Record<string, string> =
        answer.retryAfter === undefined ? {} : { "retry-after": String(answer.retryAfter) };
      const body = openAIErrorBody(answer.message, answer.errorType ?? "invalid_request_error", answer.code ?? null);
      return sendJson(res, answer.status, body, headers);
    }
    const ctx = { index: record.index, body: record.body };
    let events: SseEvent[];
    try {
      events = api === "chat" ? buildChatChunks(answer, ctx) : buildResponsesEvents(answer, ctx);
    } catch (error) {
      return sendJson(res, 500, openAIErrorBody(`${FAKE}: invalid script: ${String(error)}`, "server_error"));
    }
    await writeStream(res, api, answer, events, record);
  };

  const writeStream = async (
    res: ServerResponse,
    api: FakeOpenAIApi,
    reply: FakeOpenAIReply,
    events: readonly SseEvent[],
    record: RecordedOpenAIRequest,
  ): Promise<void> => {
    res.writeHead(200, {
      ...reply.headers,
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      connection: "keep-alive",
    });
    res.flushHeaders();
    for (let i = 0; i <= events.length; i++) {
      if (res.destroyed) return;
      if (reply.errorAfterEvents !== undefined && i === reply.errorAfterEvents.events) {
        const { code, message } = reply.errorAfterEvents;
        res.end(encodeOpenAIEvent(streamErrorEvent(api, code, message)));
        return;
      }
      if (i === reply.stallAfterEvents) return; // the client's abort or stop() closes it
      const event = events[i];
      if (event === undefined) break;
      if (i > 0 && reply.eventDelayMs !== undefined && reply.eventDelayMs > 0) {
        await sleepUnlessClosed(res, reply.eventDelayMs);
        if (res.destroyed) return;
      }
      res.write(encodeOpenAIEvent(event));
      record.eventsWritten++;
    }
    res.end(api === "chat" ? "data: [DONE]\n\n" : undefined);
  };

  const listening = await listenFake(server, FAKE, opts.port);
  const { port, stop } = listening;
  const waitFor = <T>(what: string, timeoutMs: number, probe: () => T | undefined): Promise<T> =>
    waitForChange(changes, FAKE, what, timeoutMs, probe);

  return {
    url: `http://${FAKE_HOST}:${port}/v1`,
    port,
    requests,
    script: (...answers) => {
      queue.push(...answers);
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
