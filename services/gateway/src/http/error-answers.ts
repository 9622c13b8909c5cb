// Every error answer in the one JSON shape: the gateway's own, Fastify's (body parsing, the
// router's bad URLs and over-long parameters) and Node's HTTP parser's (malformed requests).
import { type IncomingMessage, STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { FastifyError, FastifyReply } from "fastify";
import { type ApiError, apiError, errorBody } from "./api-error.js";
import { SECURITY_HEADERS } from "./security-headers.js";

/** The `WWW-Authenticate` challenge of every 401 (RFC 6750). */
export const BEARER_CHALLENGE = 'Bearer realm="fleet"';

/**
 * Sends `e` as `{error: {code, message}}`. A 401 carries the bearer challenge. An answer given
 * before the request's body was read closes the connection, so the unread body is never read.
 */
export function sendError(reply: FastifyReply, e: ApiError): FastifyReply {
  if (e.status === 401) reply.header("www-authenticate", BEARER_CHALLENGE);
  if (bodyPending(reply.request.raw)) reply.header("connection", "close");
  return reply.code(e.status).type("application/json").send(errorBody(e));
}

/** Does the request announce a body that has not been read to its end? */
function bodyPending(req: IncomingMessage): boolean {
  if (req.complete) return false;
  const length = req.headers["content-length"];
  return (length !== undefined && length !== "0") || req.headers["transfer-encoding"] !== undefined;
}

/**
 * Fastify's own errors in the gateway's shape. Messages are the gateway's: Fastify's quote the
 * request's path. `bodyLimit` is the route's (in the 413's message).
 */
export function fastifyErrorOf(err: FastifyError, bodyLimit: number | undefined): ApiError {
  const status = err.statusCode ?? 500;
  switch (err.code) {
    case "FST_ERR_BAD_URL":
      return apiError(400, "invalid", "the URL is malformed (a bad percent-encoding or invalid UTF-8)");
    case "FST_ERR_MAX_PARAM_LENGTH":
      return apiError(414, "too_long", "a path parameter is longer than the router accepts (100 characters)");
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return apiError(
        413,
        "too_large",
        bodyLimit === undefined ? "the body is over the limit" : `the body is over the limit of ${bodyLimit} bytes`,
      );
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return apiError(415, "unsupported_media_type", "unsupported content-type");
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return apiError(400, "invalid", "the body is empty but its content-type is application/json");
    case "FST_ERR_CTP_INVALID_JSON_BODY":
      return apiError(400, "invalid", "the body is not valid JSON");
  }
  if (status >= 400 && status < 500) return apiError(status, "invalid", err.message);
  return apiError(500, "internal", "internal error");
}

/** The answer to a request Node's HTTP parser refused (or timed out), as raw HTTP/1.1 bytes. */
export function clientErrorAnswer(err: NodeJS.ErrnoException & { reason?: string }): string {
  const e =
    err.code === "ERR_HTTP_REQUEST_TIMEOUT"
      ? apiError(408, "timeout", "the request was not received in time")
      : err.code === "HPE_HEADER_OVERFLOW"
        ? apiError(431, "too_large", "the request's headers are larger than the limit")
        : apiError(400, "invalid", `malformed HTTP request: ${err.reason ?? "unparseable"} (${err.code ?? "error"})`);
  const body = JSON.stringify(errorBody(e));
  const headers = {
    "content-type": "application/json; charset=utf-8",
    "content-length": String(Buffer.byteLength(body)),
    connection: "close",
    ...SECURITY_HEADERS,
  };
  const head = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("");
  return `HTTP/1.1 ${e.status} ${STATUS_CODES[e.status]}\r\n${head}\r\n${body}`;
}

/**
 * Node's `clientError`: answers in the JSON shape unless the connection is gone or a response on it
 * has begun (a reset needs no answer), then closes the connection.
 */
export function onClientError(err: NodeJS.ErrnoException & { reason?: string }, socket: Socket): void {
  // `_httpMessage` is the response Node is writing on this socket, if any (what Node's own handler checks).
  const current = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code !== "ECONNRESET" && socket.writable && !current?.headersSent) socket.write(clientErrorAnswer(err));
  socket.destroy();
}
