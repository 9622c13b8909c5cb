// Headers every answer of the gateway carries, and the web console's Content-Security-Policy.
import type { Server } from "node:http";

/**
 * On every answer (JSON, SSE, metrics, errors, the console): no MIME sniffing, no framing, no
 * referrer, and a policy that lets an API answer load nothing should a browser render it.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "content-security-policy": "default-src 'none'; frame-ancestors 'none'",
};

/**
 * The console's policy: its own scripts, styles and API only (no inline script or style, no
 * `eval`, no other origin), never framed.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

/**
 * Sets `SECURITY_HEADERS` on every response of `server` before any handler runs, so answers that
 * bypass Fastify's hooks (hijacked SSE streams, the router's own errors) carry them too.
 */
export function applySecurityHeaders(server: Server): void {
  server.prependListener("request", (_req, res) => {
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
  });
}
