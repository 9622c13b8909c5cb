// CORS for the configured browser origins (FLEET_GATEWAY_CORS_ORIGINS), with @fastify/cors.
import cors from "@fastify/cors";
import type { FastifyInstance } from "fastify";

/** Request headers a page may send: the bearer token, JSON bodies, and EventSource's resume header. */
const ALLOWED_HEADERS = ["authorization", "content-type", "last-event-id"];
/** How long a browser may cache a preflight answer (s). */
const PREFLIGHT_MAX_AGE_S = 600;

/**
 * Lets pages of `origins` call the API (every route, the SSE stream included): requests with an
 * `Origin` in the list get `Access-Control-Allow-Origin: <origin>` and `Vary: Origin`, and their
 * preflights (`OPTIONS`) are answered 204. Other origins get no CORS headers (their browser refuses
 * the answer), and an `OPTIONS` from them is an unknown route (404). No credentials (cookies): the
 * API takes bearer tokens and stream tickets. Nothing is registered for an empty list.
 */
export async function registerCors(app: FastifyInstance, origins: readonly string[]): Promise<void> {
  if (origins.length === 0) return;
  const allowed = new Set(origins);
  await app.register(cors, {
    origin: (origin, callback) => callback(null, origin !== undefined && allowed.has(origin) ? origin : false),
    methods: ["GET", "HEAD", "POST", "PUT", "DELETE"],
    allowedHeaders: ALLOWED_HEADERS,
    exposedHeaders: ["www-authenticate", "content-disposition"],
    credentials: false,
    maxAge: PREFLIGHT_MAX_AGE_S,
    strictPreflight: false,
  });
}

/**
 * The CORS headers the plugin set on `headers` (a reply's), for an answer written to the raw
 * response (a hijacked SSE stream does not send the reply's headers).
 */
export function corsHeadersOf(headers: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if ((name.startsWith("access-control-") || name === "vary") && value !== undefined) out[name] = String(value);
  }
  return out;
}
