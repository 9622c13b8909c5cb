// FLEET_GATEWAY_TOKENS: bearer tokens → tenant and role, and per-tenant NATS credentials.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { z } from "zod";

export const Role = z.enum(["read", "operate"]);
export type Role = z.infer<typeof Role>;

const TenantName = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "tenant names match ^[A-Za-z0-9_-]{1,64}$");

/**
 * The tokens file (JSON):
 * `{"tokens": [{"token": "…", "tenant": "acme", "role": "read" | "operate"}],
 *   "tenants": {"acme": {"natsCreds": "/path/acme.creds"}}}`.
 * A tenant without `natsCreds` uses the gateway's own NATS connection.
 */
export const TokensFile = z
  .object({
    tokens: z.array(
      z.object({ token: z.string().min(16, "tokens have at least 16 characters"), tenant: TenantName, role: Role }),
    ),
    tenants: z.record(TenantName, z.object({ natsCreds: z.string().min(1).optional() })).default({}),
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
  /** Credentials file of a tenant, when it has one. */
  credsOf(tenant: string): string | undefined;
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
  return {
    lookup: (token) => byDigest.get(digest(token)),
    credsOf: (tenant) => file.tenants[tenant]?.natsCreds,
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
