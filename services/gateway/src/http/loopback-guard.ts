// Loopback mode (no tokens file) trusts every loopback client, so it must know the request comes
// from a loopback client *that meant to call it*: a web page whose domain an attacker re-points at
// 127.0.0.1 (DNS rebinding) sends its own domain in `Host`, and a page of another origin that posts
// to the gateway (cross-site request forgery) sends its own `Origin` and `Sec-Fetch-Site`.
import { type ApiError, apiError, excerpt } from "./api-error.js";

/** What the guard reads of a request. */
export interface RequestOrigin {
  method: string;
  host: string | undefined;
  origin: string | undefined;
  secFetchSite: string | undefined;
}

const SAFE_METHODS = new Set(["GET", "HEAD"]);

/** The host name of a `Host` header (lower case, IPv6 in brackets), or undefined when it is malformed. */
export function hostnameOf(host: string): string | undefined {
  if (!URL.canParse(`http://${host}`)) return undefined;
  const url = new URL(`http://${host}`);
  // `Host` is host[:port] and nothing else.
  if (url.username || url.password || url.pathname !== "/" || url.search || url.hash) return undefined;
  return url.hostname.replace(/\.$/, "");
}

/** `localhost`, `*.localhost` (RFC 6761: never resolved by DNS), 127.0.0.0/8 and `[::1]`. */
export function isLoopbackHostname(hostname: string): boolean {
  return (
    hostname === "localhost" ||
    hostname.endsWith(".localhost") ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname) ||
    hostname === "[::1]"
  );
}

/**
 * Pure: undefined when a loopback-mode gateway may serve the request, else its 403.
 * - `Host` must name a loopback host or one of `allowedHosts` (FLEET_GATEWAY_HOSTS); a request
 *   without `Host` (HTTP/1.0; browsers always send it) passes.
 * - A request that is not GET or HEAD must not come from another origin: its `Origin`, when sent,
 *   is this gateway's own (`http(s)://<Host>`) or one of `corsOrigins` (FLEET_GATEWAY_CORS_ORIGINS),
 *   and its `Sec-Fetch-Site`, when sent, is `same-origin` or `none` (unless the origin is listed).
 *   Programs (curl, the SDK) send neither.
 */
export function loopbackRefusal(
  req: RequestOrigin,
  allowedHosts: ReadonlySet<string>,
  corsOrigins: ReadonlySet<string> = new Set(),
): ApiError | undefined {
  if (req.host !== undefined) {
    const hostname = hostnameOf(req.host);
    if (hostname === undefined || !(isLoopbackHostname(hostname) || allowedHosts.has(hostname))) {
      return apiError(
        403,
        "forbidden",
        `Host ${JSON.stringify(excerpt(req.host, 100))} is not a loopback name nor one of FLEET_GATEWAY_HOSTS: a gateway without a tokens file answers only requests addressed to it by such a name (DNS rebinding protection)`,
      );
    }
  }
  if (SAFE_METHODS.has(req.method)) return undefined;
  // An origin the operator listed in FLEET_GATEWAY_CORS_ORIGINS is trusted like the gateway's own.
  if (req.origin !== undefined && corsOrigins.has(req.origin)) return undefined;
  if (req.origin !== undefined && !sameOrigin(req.origin, req.host)) {
    return apiError(
      403,
      "forbidden",
      `cross-origin ${req.method} refused: Origin ${JSON.stringify(excerpt(req.origin, 100))} is not this gateway's origin`,
    );
  }
  if (req.secFetchSite !== undefined && req.secFetchSite !== "same-origin" && req.secFetchSite !== "none") {
    return apiError(
      403,
      "forbidden",
      `cross-origin ${req.method} refused: Sec-Fetch-Site is ${JSON.stringify(excerpt(req.secFetchSite, 40))}`,
    );
  }
  return undefined;
}

/**
 * Is `origin` (`scheme://host[:port]`) the origin of the page the gateway serves as `<host>`? The
 * scheme may be https (a TLS proxy in front that keeps `Host`).
 */
function sameOrigin(origin: string, host: string | undefined): boolean {
  if (host === undefined || !URL.canParse(origin) || !URL.canParse(`http://${host}`)) return false;
  const from = new URL(origin);
  return (
    (from.protocol === "http:" || from.protocol === "https:") &&
    from.origin === origin &&
    from.host === new URL(`${from.protocol}//${host}`).host
  );
}
