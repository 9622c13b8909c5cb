// FLEET_GATEWAY_TOKENS: bearer tokens → tenant and role, and per-tenant NATS credentials.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { NATS_AUTH_ENV, type NatsAuthSettings } from "@fleet/runtime";
import { z } from "zod";

export const Role = z.enum(["read", "operate"]);
export type Role = z.infer<typeof Role>;

const TenantName = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "tenant names match ^[A-Za-z0-9_-]{1,64}$");

/**
 * A tenant's NATS login in the tokens file: one field per login setting, named after its variable
 * (`NATS_CREDS` → `natsCreds`, `NATS_TLS_CA` → `natsTlsCa`). Paths name files; `natsPassword` and
 * `natsToken` are secrets, like the bearer tokens beside them.
 */
export const TENANT_LOGIN_FIELDS = Object.fromEntries(
  Object.entries(NATS_AUTH_ENV).map(([key, env]) => [
    key,
    env.toLowerCase().replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase()),
  ]),
) as Record<keyof NatsAuthSettings, string>;

const TenantLogin = z
  .object(Object.fromEntries(Object.values(TENANT_LOGIN_FIELDS).map((f) => [f, z.string().min(1).optional()])))
  .strict();

/**
 * The tokens file (JSON):
 * `{"tokens": [{"token": "…", "tenant": "acme", "role": "read" | "operate"}],
 *   "tenants": {"acme": {"natsCreds": "/path/acme-gateway.creds", "natsTlsCa": "/path/ca.pem"}}}`.
 * Every tenant a token names reaches NATS only as its own identity: its `tenants` entry, or the
 * gateway's own login (NATS_*) for the tenant FLEET_TENANT names.
 */
export const TokensFile = z
  .object({
    tokens: z.array(
      z.object({ token: z.string().min(16, "tokens have at least 16 characters"), tenant: TenantName, role: Role }),
    ),
    tenants: z.record(TenantName, TenantLogin).default({}),
  })
  .strict();
export type TokensFile = z.infer<typeof TokensFile>;

/** Who is calling. */
export interface Principal {
  tenant: string;
  role: Role;
  /** Names the token without revealing it (the first 12 hex digits of its SHA-256); absent without tokens. */
  tokenId?: string;
}

/** The tenant of loopback clients when there is no tokens file. */
export const LOCAL_TENANT = "local";

export interface TokenTable {
  /** The principal of a presented token, or undefined. */
  lookup(token: string): Principal | undefined;
  /** Every tenant some token names, sorted. */
  tenants(): string[];
  /** A tenant's own NATS login from its `tenants` entry; undefined when it has none. */
  loginOf(tenant: string): NatsAuthSettings | undefined;
  readonly size: number;
}

const digest = (token: string) => createHash("sha256").update(token).digest("base64");

/** Tokens are held by their SHA-256 digest, so a lookup compares digests, not the secrets. */
export function tokenTable(file: TokensFile): TokenTable {
  const byDigest = new Map<string, Principal>();
  for (const t of file.tokens) {
    const tokenId = createHash("sha256").update(t.token).digest("hex").slice(0, 12);
    byDigest.set(digest(t.token), { tenant: t.tenant, role: t.role, tokenId });
  }
  const loginOf = (tenant: string): NatsAuthSettings | undefined => {
    const entry = file.tenants[tenant] as Record<string, string | undefined> | undefined;
    if (!entry) return undefined;
    const login: NatsAuthSettings = {};
    for (const [key, field] of Object.entries(TENANT_LOGIN_FIELDS) as [keyof NatsAuthSettings, string][]) {
      if (entry[field] !== undefined) login[key] = entry[field];
    }
    return Object.keys(login).length > 0 ? login : undefined;
  };
  return {
    lookup: (token) => byDigest.get(digest(token)),
    tenants: () => [...new Set(file.tokens.map((t) => t.tenant))].sort(),
    loginOf,
    size: byDigest.size,
  };
}

/** Reads and validates the tokens file; errors are one line naming the file. */
export function loadTokensFile(path: string): { ok: true; table: TokenTable } | { ok: false; error: string } {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    return { ok: false, error: `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}` };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    return { ok: false, error: `${path} is not JSON: ${(err as Error).message}` };
  }
  const parsed = TokensFile.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join(".") || "file"}: ${i.message}`).join("; ");
    return { ok: false, error: `${path}: ${issues}` };
  }
  return { ok: true, table: tokenTable(parsed.data) };
}
