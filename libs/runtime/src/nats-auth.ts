// NATS login settings from the environment (or CLI flags) as nats.js v3 connection options.
import { readFileSync } from "node:fs";
import {
  type Authenticator,
  type ConnectionOptions,
  credsAuthenticator,
  nkeyAuthenticator,
  nkeys,
  type TlsOptions,
  tokenAuthenticator,
  usernamePasswordAuthenticator,
} from "@nats-io/transport-node";
import { z } from "zod";

/**
 * How a process logs in to NATS. Paths name files; `password` and `token` are secrets and are never
 * logged or printed (see `describeNatsAuth`). At most one of `creds`, `nkey`, `user` and `token`.
 */
export interface NatsAuthSettings {
  /** A creds file (user JWT + nkey seed), as `nsc` writes it. */
  creds?: string | undefined;
  /** A file holding an nkey user seed (`SU…`). */
  nkey?: string | undefined;
  user?: string | undefined;
  password?: string | undefined;
  token?: string | undefined;
  /** PEM files: the CA to trust, and a client certificate with its key (mutual TLS). */
  tlsCa?: string | undefined;
  tlsCert?: string | undefined;
  tlsKey?: string | undefined;
}

/** The environment names, one per setting. Every service, the SDK and the CLI read exactly these. */
export const NATS_AUTH_ENV = {
  creds: "NATS_CREDS",
  nkey: "NATS_NKEY",
  user: "NATS_USER",
  password: "NATS_PASSWORD",
  token: "NATS_TOKEN",
  tlsCa: "NATS_TLS_CA",
  tlsCert: "NATS_TLS_CERT",
  tlsKey: "NATS_TLS_KEY",
} as const satisfies Record<keyof NatsAuthSettings, string>;

/** The zod fields of the login variables, for a service's environment schema. */
export const natsAuthEnvFields = Object.fromEntries(
  Object.values(NATS_AUTH_ENV).map((name) => [name, z.string().optional()]),
) as { [K in (typeof NATS_AUTH_ENV)[keyof typeof NATS_AUTH_ENV]]: z.ZodOptional<z.ZodString> };

/** Picks the login settings out of an environment; empty values count as unset. */
export function natsAuthFromEnv(env: Record<string, string | undefined>): NatsAuthSettings {
  const out: NatsAuthSettings = {};
  for (const [key, name] of Object.entries(NATS_AUTH_ENV) as [keyof NatsAuthSettings, string][]) {
    const value = env[name];
    if (value) out[key] = value;
  }
  return out;
}

/** Connection options for the settings, and who logs in (for messages; never a secret). */
export interface NatsAuth {
  options: Pick<ConnectionOptions, "authenticator" | "tls">;
  /** `user "loop"`, `nkey UABC…`, `creds user "loop" (UABC…)`, `token` or `anonymous`. */
  identity: string;
}

/**
 * Turns login settings into nats.js options, reading the creds/nkey files now so a bad path fails at
 * start. Errors are data and name the setting (by `names`, default the variables) and path, never a
 * file's content or a secret.
 */
export function buildNatsAuth(
  settings: NatsAuthSettings,
  names: Record<keyof NatsAuthSettings, string> = NATS_AUTH_ENV,
): { ok: true; auth: NatsAuth } | { ok: false; error: string } {
  const methods = (["creds", "nkey", "user", "token"] as const).filter((k) => settings[k]);
  if (methods.length > 1) {
    return {
      ok: false,
      error: `set only one of ${methods.map((m) => names[m]).join(", ")}: each is a complete login`,
    };
  }
  if (settings.password && !settings.user) {
    return { ok: false, error: `${names.password} is set without ${names.user}` };
  }
  if (settings.user && !settings.password) {
    return { ok: false, error: `${names.user} is set without ${names.password}` };
  }
  if (Boolean(settings.tlsCert) !== Boolean(settings.tlsKey)) {
    return {
      ok: false,
      error: `${names.tlsCert} and ${names.tlsKey} go together (a client certificate and its key)`,
    };
  }
  let authenticator: Authenticator | undefined;
  let identity = "anonymous";
  if (settings.creds) {
    const creds = readSetting(names, "creds", settings.creds);
    if (!creds.ok) return creds;
    const who = credsIdentity(creds.bytes);
    if (!who) return { ok: false, error: `${names.creds} ${settings.creds} holds no user JWT and seed` };
    authenticator = credsAuthenticator(creds.bytes);
    identity = `creds user ${who}`;
  } else if (settings.nkey) {
    const seed = readSetting(names, "nkey", settings.nkey);
    if (!seed.ok) return seed;
    const trimmed = new TextEncoder().encode(new TextDecoder().decode(seed.bytes).trim());
    let publicKey: string;
    try {
      publicKey = nkeys.fromSeed(trimmed).getPublicKey();
    } catch {
      return { ok: false, error: `${names.nkey} ${settings.nkey} does not hold an nkey seed` };
    }
    authenticator = nkeyAuthenticator(trimmed);
    identity = `nkey ${publicKey}`;
  } else if (settings.user) {
    authenticator = usernamePasswordAuthenticator(settings.user, settings.password);
    identity = `user ${JSON.stringify(settings.user)}`;
  } else if (settings.token) {
    authenticator = tokenAuthenticator(settings.token);
    identity = "token";
  }
  let tls: TlsOptions | undefined;
  if (settings.tlsCa || settings.tlsCert) {
    tls = {};
    for (const [key, option] of [
      ["tlsCa", "caFile"],
      ["tlsCert", "certFile"],
      ["tlsKey", "keyFile"],
    ] as const) {
      const path = settings[key];
      if (!path) continue;
      const readable = readSetting(names, key, path);
      if (!readable.ok) return readable;
      tls[option] = path;
    }
  }
  return {
    ok: true,
    auth: {
      options: { ...(authenticator ? { authenticator } : {}), ...(tls ? { tls } : {}) },
      identity: tls?.certFile ? `${identity} with TLS client certificate` : identity,
    },
  };
}

/** What `fleet doctor` and start-up logs may show: the method and user, and file paths, never secrets. */
export function describeNatsAuth(settings: NatsAuthSettings): string {
  const parts: string[] = [];
  if (settings.creds) parts.push(`creds file ${settings.creds}`);
  if (settings.nkey) parts.push(`nkey seed file ${settings.nkey}`);
  if (settings.user) parts.push(`user ${JSON.stringify(settings.user)} with a password`);
  if (settings.token) parts.push("a token");
  if (settings.tlsCa) parts.push(`CA ${settings.tlsCa}`);
  if (settings.tlsCert) parts.push(`client certificate ${settings.tlsCert}`);
  return parts.length ? parts.join(", ") : "no credentials";
}

/** `nats://user:secret@host` → `nats://user:***@host`; a token in the URL becomes `***`. */
export function redactUrl(url: string): string {
  return url
    .split(",")
    .map((one) =>
      one.replace(/^([a-z]+:\/\/)([^@/]+)@/i, (_m, scheme: string, cred: string) => {
        const colon = cred.indexOf(":");
        return `${scheme}${colon === -1 ? "***" : `${cred.slice(0, colon)}:***`}@`;
      }),
    )
    .join(",");
}

function readSetting(
  names: Record<keyof NatsAuthSettings, string>,
  key: keyof NatsAuthSettings,
  path: string,
): { ok: true; bytes: Uint8Array } | { ok: false; error: string } {
  try {
    return { ok: true, bytes: readFileSync(path) };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? "unreadable";
    return { ok: false, error: `${names[key]}: cannot read ${path} (${code})` };
  }
}

/** The user named in a creds file's JWT (`name` claim, and its public key), or null. */
function credsIdentity(bytes: Uint8Array): string | null {
  const text = new TextDecoder().decode(bytes);
  const jwt = /-----BEGIN NATS USER JWT-----\s*([A-Za-z0-9_.-]+)\s*------END NATS USER JWT------/.exec(text)?.[1];
  if (!jwt || !/-----BEGIN USER NKEY SEED-----/.test(text)) return null;
  try {
    const claims = JSON.parse(Buffer.from(jwt.split(".")[1] ?? "", "base64url").toString("utf8")) as {
      name?: unknown;
      sub?: unknown;
    };
    const sub = typeof claims.sub === "string" ? claims.sub : "?";
    return typeof claims.name === "string" ? `${JSON.stringify(claims.name)} (${sub})` : sub;
  } catch {
    return null;
  }
}
