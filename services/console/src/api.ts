// The gateway's HTTP API as the console uses it: JSON calls with the bearer token (if one is set),
// to the gateway that serves the console or to one set by URL (then the gateway must list the
// console's origin in FLEET_GATEWAY_CORS_ORIGINS). Errors are data: `{ok: false, status, code, message}`.

const TOKEN_KEY = "fleet.token";
const GATEWAY_KEY = "fleet.gateway";

export function token(): string | null {
  return localStorage.getItem(TOKEN_KEY);
}

export function setToken(value: string): void {
  if (value) localStorage.setItem(TOKEN_KEY, value);
  else localStorage.removeItem(TOKEN_KEY);
}

/** The gateway's base URL (`https://gateway.example.com`), or "" for the site that serves the console. */
export function gatewayBase(): string {
  return localStorage.getItem(GATEWAY_KEY) ?? "";
}

/** Sets the gateway's base URL; "" (or one that is not an http(s) URL) means this site. */
export function setGatewayBase(value: string): void {
  const url = value.trim().replace(/\/+$/, "");
  if (url && /^https?:\/\/[^/]+$/.test(url)) localStorage.setItem(GATEWAY_KEY, url);
  else localStorage.removeItem(GATEWAY_KEY);
}

/** An API path on the gateway. */
export const gatewayUrl = (path: string): string => `${gatewayBase()}${path}`;

export function authHeaders(): Record<string, string> {
  const t = token();
  return t ? { authorization: `Bearer ${t}` } : {};
}

export type ApiResult<T> =
  | { ok: true; status: number; body: T }
  | { ok: false; status: number; code: string; message: string };

const unreachable = (err: unknown): ApiResult<never> => ({
  ok: false,
  status: 0,
  code: "unreachable",
  message: `the gateway is unreachable: ${String(err)}`,
});

/** The error of a failed answer, from its JSON error body. */
async function failure(res: Response): Promise<ApiResult<never>> {
  const text = await res.text();
  let error: { code?: string; message?: string } | undefined;
  try {
    error = (JSON.parse(text) as { error?: { code?: string; message?: string } }).error;
  } catch {}
  return { ok: false, status: res.status, code: error?.code ?? "http", message: error?.message ?? text };
}

export async function api<T>(
  method: "GET" | "POST" | "PUT" | "DELETE",
  path: string,
  body?: unknown,
): Promise<ApiResult<T>> {
  return body === undefined
    ? send<T>(method, path, undefined, undefined)
    : send<T>(method, path, JSON.stringify(body), "application/json");
}

/** A call with a text body of `contentType` (a pi JSONL file to import). */
export function apiText<T>(method: "POST" | "PUT", path: string, text: string, contentType: string) {
  return send<T>(method, path, text, contentType);
}

async function send<T>(
  method: string,
  path: string,
  body: string | undefined,
  contentType: string | undefined,
): Promise<ApiResult<T>> {
  let res: Response;
  try {
    res = await fetch(gatewayUrl(path), {
      method,
      headers: { ...authHeaders(), ...(contentType !== undefined ? { "content-type": contentType } : {}) },
      ...(body !== undefined ? { body } : {}),
    });
  } catch (err) {
    return unreachable(err);
  }
  if (!res.ok) return failure(res);
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { ok: true, status: res.status, body: parsed as T };
}

/** The bytes of a GET answer (an object by reference). */
export async function apiBytes(path: string): Promise<ApiResult<Uint8Array>> {
  let res: Response;
  try {
    res = await fetch(gatewayUrl(path), { headers: authHeaders() });
  } catch (err) {
    return unreachable(err);
  }
  if (!res.ok) return failure(res);
  return { ok: true, status: res.status, body: new Uint8Array(await res.arrayBuffer()) };
}

/** Sends one command to a session; a `command_rejected` outcome comes back as an error. */
export async function command(sessionId: string, body: Record<string, unknown>): Promise<ApiResult<unknown>> {
  const r = await api<{ event?: { type: string; reason?: string; message?: string } }>(
    "POST",
    `/v1/sessions/${encodeURIComponent(sessionId)}/commands`,
    body,
  );
  if (r.ok && r.body.event?.type === "command_rejected") {
    const e = r.body.event;
    return { ok: false, status: 200, code: "rejected", message: e.message ?? e.reason ?? "rejected" };
  }
  return r;
}
