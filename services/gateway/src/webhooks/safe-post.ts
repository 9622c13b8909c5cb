// One webhook POST that reaches only allowed addresses: the host is resolved, every address it
// resolves to is checked, and the connection is made to a checked address (never resolved again, so
// a DNS answer that changes between the check and the connect cannot redirect it). Each redirect
// (307/308, which keep the POST) is checked the same way.
import { promises as dns } from "node:dns";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP, type LookupFunction } from "node:net";
import { type AddressAllowance, addressRefusal } from "./address-policy.js";

/** A resolved address of a host name. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has (rejects when it has none). */
export type ResolveHost = (hostname: string) => Promise<ResolvedAddress[]>;

/**
 * The system resolver (getaddrinfo: /etc/hosts, then DNS), or the given DNS servers
 * (`FLEET_WEBHOOK_DNS_SERVERS`, `ip` or `ip:port`), asked for A and AAAA records.
 */
export function createResolver(servers: readonly string[] = []): ResolveHost {
  if (servers.length === 0) {
    return async (hostname) =>
      (await dns.lookup(hostname, { all: true, verbatim: true })).map((a) => ({
        address: a.address,
        family: a.family === 6 ? 6 : 4,
      }));
  }
  const resolver = new dns.Resolver({ timeout: 5_000, tries: 2 });
  resolver.setServers([...servers]);
  return async (hostname) => {
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(hostname), resolver.resolve6(hostname)]);
    const out: ResolvedAddress[] = [
      ...(v4.status === "fulfilled" ? v4.value.map((address) => ({ address, family: 4 as const })) : []),
      ...(v6.status === "fulfilled" ? v6.value.map((address) => ({ address, family: 6 as const })) : []),
    ];
    if (out.length === 0) {
      const reason = v4.status === "rejected" ? (v4.reason as Error).message : "no A or AAAA record";
      throw new Error(`cannot resolve ${hostname}: ${reason}`);
    }
    return out;
  };
}

/** Where a webhook may go: the allowance and how names are resolved. */
export interface DeliveryPolicy {
  allowance: AddressAllowance;
  resolve: ResolveHost;
}

export type AddressCheck = { ok: true; addresses: ResolvedAddress[] } | { ok: false; reason: string };

/**
 * The addresses a URL's host may be reached at, or why it may not: an IP literal is checked as it
 * is; a name is resolved and refused when any of its addresses is (a name that also points at a
 * private address is not trusted with its public one).
 */
export async function checkHost(hostname: string, policy: DeliveryPolicy): Promise<AddressCheck> {
  const host = hostname.replace(/^\[|\]$/g, "");
  let addresses: ResolvedAddress[];
  if (isIP(host) !== 0) addresses = [{ address: host, family: isIP(host) === 6 ? 6 : 4 }];
  else {
    try {
      addresses = await policy.resolve(host);
    } catch (err) {
      return {
        ok: false,
        reason: `cannot resolve ${host} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
      };
    }
  }
  if (addresses.length === 0) return { ok: false, reason: `${host} resolves to no address` };
  for (const a of addresses) {
    const refused = addressRefusal(a.address, policy.allowance);
    if (refused)
      return { ok: false, reason: host === a.address ? refused : `${host} resolves to a refused address: ${refused}` };
  }
  return { ok: true, addresses };
}

/** Why a URL may not receive webhooks (its scheme or its host's addresses), or undefined. */
export async function urlRefusal(url: string, policy: DeliveryPolicy): Promise<string | undefined> {
  if (!URL.canParse(url)) return "not a URL";
  const parsed = new URL(url);
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return `${parsed.protocol} is not http(s)`;
  const check = await checkHost(parsed.hostname, policy);
  return check.ok ? undefined : check.reason;
}

/** How one delivery ended. `address` is the one connected to; `urls` every URL tried, redirects included. */
export type PostOutcome =
  | { kind: "ok"; status: number; address: string; urls: string[] }
  | { kind: "http"; status: number; address: string; urls: string[]; detail: string }
  | { kind: "refused"; reason: string; urls: string[] }
  | { kind: "timeout"; urls: string[] }
  | { kind: "error"; detail: string; urls: string[] };

export interface PostOptions {
  url: string;
  headers: Record<string, string>;
  body: string;
  policy: DeliveryPolicy;
  /** Covers every hop. */
  timeoutMs: number;
  signal: AbortSignal;
  /** 307/308 redirects followed (default 3). */
  maxRedirects?: number;
}

/** Bytes of a failed answer's body quoted in its outcome. */
const DETAIL_BYTES = 200;

/** POSTs `body`; never throws. */
export async function safePost(opts: PostOptions): Promise<PostOutcome> {
  const urls: string[] = [];
  const timeout = AbortSignal.timeout(opts.timeoutMs);
  const signal = AbortSignal.any([opts.signal, timeout]);
  let url = opts.url;
  for (let hop = 0; ; hop++) {
    urls.push(url);
    const target = new URL(url);
    if (target.protocol !== "http:" && target.protocol !== "https:") {
      return { kind: "refused", reason: `redirect to ${target.protocol} (not http(s))`, urls };
    }
    const check = await checkHost(target.hostname, opts.policy);
    if (signal.aborted) return timeout.aborted ? { kind: "timeout", urls } : { kind: "error", detail: "stopped", urls };
    if (!check.ok) return { kind: "refused", reason: check.reason, urls };
    let answer: { res: IncomingMessage; address: string; detail: string };
    try {
      answer = await post(target, check.addresses, opts, signal);
    } catch (err) {
      if (timeout.aborted) return { kind: "timeout", urls };
      const e = err as NodeJS.ErrnoException;
      return {
        kind: "error",
        detail: e.code && !e.message.includes(e.code) ? `${e.code} ${e.message}` : e.message,
        urls,
      };
    }
    const { res, address, detail } = answer;
    const status = res.statusCode ?? 0;
    const location = res.headers.location;
    if ((status === 307 || status === 308) && location && hop < (opts.maxRedirects ?? 3)) {
      if (!URL.canParse(location, url)) return { kind: "error", detail: `bad redirect location ${location}`, urls };
      url = new URL(location, url).href;
      continue;
    }
    if (status >= 200 && status < 300) return { kind: "ok", status, address, urls };
    const why = status >= 300 && status < 400 ? "a redirect other than 307/308, or too many" : detail;
    return { kind: "http", status, address, urls, detail: why };
  }
}

/** One request to a checked address; resolves when the answer's body has been read (or cut off). */
function post(
  target: URL,
  addresses: ResolvedAddress[],
  opts: PostOptions,
  signal: AbortSignal,
): Promise<{ res: IncomingMessage; address: string; detail: string }> {
  // Node calls `lookup` for a host name (never for an IP literal, which was checked as it is): it
  // gets the addresses checked above, and nothing is resolved again.
  const lookup: LookupFunction = (_hostname, options, callback) => {
    if ((options as { all?: boolean }).all) (callback as (e: null, a: ResolvedAddress[]) => void)(null, addresses);
    else {
      const first = addresses[0] as ResolvedAddress;
      callback(null, first.address, first.family);
    }
  };
  const request = target.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(
      target,
      {
        method: "POST",
        headers: { ...opts.headers, "content-length": String(Buffer.byteLength(opts.body)) },
        lookup,
        signal,
        // One connection per delivery: a kept-alive socket would skip the check of the next one.
        agent: false,
      },
      (res) => {
        const address = res.socket.remoteAddress ?? "";
        let detail = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          if (detail.length < DETAIL_BYTES) detail += chunk.slice(0, DETAIL_BYTES - detail.length);
        });
        res.on("end", () => resolve({ res, address, detail: detail.trim() }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(opts.body);
  });
}
