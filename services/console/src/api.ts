// The gateway's HTTP API as the console uses it: JSON calls with the bearer token (if one is set).
// Errors are data: `{ok: false, status, code, message}`.

const TOKEN_KEY = "fleet.token";

export function token(): string | null {
  return localStorage.getItem(TOKEN_KEY);
}

export function setToken(value: string): void {
  if (value) localStorage.setItem(TOKEN_KEY, value);
  else localStorage.removeItem(TOKEN_KEY);
}

export function authHeaders(): Record<string, string> {
  const t = token();
  return t ? { authorization: `Bearer ${t}` } : {};
}

export type ApiResult<T> =
  | { ok: true; status: number; body: T }
  | { ok: false; status: number; code: string; message: string };

export async function api<T>(method: "GET" | "POST" | "DELETE", path: string, body?: unknown): Promise<ApiResult<T>> {
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers: { ...authHeaders(), ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  } catch (err) {
    return { ok: false, status: 0, code: "unreachable", message: `the gateway is unreachable: ${String(err)}` };
  }
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (res.ok) return { ok: true, status: res.status, body: parsed as T };
  const error = (parsed as { error?: { code?: string; message?: string } } | undefined)?.error;
  return { ok: false, status: res.status, code: error?.code ?? "http", message: error?.message ?? text };
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
