// A scripted fake of Anthropic's Messages API (POST /v1/messages) over node:http, streaming real SSE.

import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { buildMessage, buildSseEvents, encodeSseEvent, errorBody, type SseEvent } from "./fake-anthropic-events.js";
import { type FakeReply, MessagesRequestBody, type RecordedRequest } from "./fake-anthropic-types.js";
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
import { createFakeScript, type FakeScriptControls } from "./fake-script.js";

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
export interface FakeAnthropic extends FakeScriptControls<RecordedRequest, FakeReply> {
  /** `http://127.0.0.1:<port>`: pass as the SDK's `baseURL`. */
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
}

/** Starts the fake on 127.0.0.1 and resolves once it is listening. */
export async function startFakeAnthropic(opts: FakeAnthropicOptions = {}): Promise<FakeAnthropic> {
  const script = createFakeScript<RecordedRequest, FakeReply>("fake-anthropic");

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
      index: script.nextIndex(),
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
    script.record(record, res, () => listening.isStopping());
    res.setHeader("request-id", `req_fake_${record.index}`);

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

    const next = script.answer(record);
    if (!next.ok) return sendJson(res, 500, errorBody("api_error", next.error));
    const reply = next.answer;
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
    const { errorAfterEvents: error } = reply;
    const errorAfter = error && {
      events: error.events,
      text: encodeSseEvent({ event: "error", data: errorBody(error.errorType, error.message) }),
    };
    await writeSseStream(res, events.map(encodeSseEvent), { ...reply, errorAfter }, record);
  };

  const listening = await listenFake(server, "fake-anthropic", opts.port);
  const { port, stop } = listening;
  return {
    url: `http://${FAKE_HOST}:${port}`,
    port,
    ...script.controls,
    stop,
  };
}
