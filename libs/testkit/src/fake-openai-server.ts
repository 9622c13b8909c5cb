// A scripted fake of OpenAI's streaming APIs over node:http: Chat Completions (POST /v1/chat/completions,
// what vLLM, Ollama, OpenRouter… speak) and Responses (POST /v1/responses).

import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { SseEvent } from "./fake-anthropic-events.js";
import {
  FAKE_HOST,
  formatIssue,
  listenFake,
  parseJson,
  publicHeaders,
  readAuth,
  readBody,
  sendJson,
  writeSseStream,
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
  OpenAIRequestBody,
  type RecordedOpenAIRequest,
} from "./fake-openai-types.js";
import { createFakeScript, type FakeScriptControls } from "./fake-script.js";

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
export interface FakeOpenAI extends FakeScriptControls<RecordedOpenAIRequest, FakeOpenAIAnswer> {
  /** `http://127.0.0.1:<port>/v1`: the `baseURL` of the SDK, a models.json `baseUrl`. */
  readonly url: string;
  readonly port: number;
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
  const script = createFakeScript<RecordedOpenAIRequest, FakeOpenAIAnswer>(FAKE);

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
      index: script.nextIndex(),
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
    script.record(record, res, () => listening.isStopping());
    res.setHeader("x-request-id", `req_fake_${record.index}`);

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

    const next = script.answer(record);
    if (!next.ok) return sendJson(res, 500, openAIErrorBody(next.error, "server_error"));
    const answer = next.answer;
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
    const { errorAfterEvents: error } = answer;
    const errorAfter = error && {
      events: error.events,
      text: encodeOpenAIEvent(streamErrorEvent(api, error.code, error.message)),
    };
    const tail = api === "chat" ? "data: [DONE]\n\n" : "";
    await writeSseStream(res, events.map(encodeOpenAIEvent), { ...answer, errorAfter }, record, tail);
  };

  const listening = await listenFake(server, FAKE, opts.port);
  const { port, stop } = listening;
  return {
    url: `http://${FAKE_HOST}:${port}/v1`,
    port,
    ...script.controls,
    stop,
  };
}
