// Which NATS identity each tenant of the gateway uses: a tenant reaches NATS only as itself.
import { buildNatsAuth, NATS_AUTH_ENV, type NatsAuthSettings } from "@fleet/runtime";
import { LOCAL_TENANT, TENANT_LOGIN_FIELDS, type TokenTable } from "./http/tokens-file.js";

/** One tenant's login, and where it was configured (for messages). */
export interface TenantIdentity {
  tenant: string;
  login: NatsAuthSettings;
  /** `env`: the gateway's own NATS_* login; `tokens-file`: the tenant's entry under `tenants`. */
  source: "env" | "tokens-file";
}

export interface IdentityInput {
  tokens: TokenTable | undefined;
  /** FLEET_TENANT: the tenant whose account the gateway's own login (NATS_*) belongs to. */
  ownTenant: string | undefined;
  ownLogin: NatsAuthSettings;
}

/**
 * Pure. Without a tokens file: tenant `local` (loopback clients) on the gateway's own login. With
 * one: every tenant a token names, each on its `tenants` entry, or on the gateway's own login when it
 * is FLEET_TENANT; a tenant with neither is an error (its requests would otherwise run in another
 * tenant's account).
 */
export function tenantIdentities(
  input: IdentityInput,
): { ok: true; identities: TenantIdentity[] } | { ok: false; error: string } {
  if (!input.tokens) return { ok: true, identities: [{ tenant: LOCAL_TENANT, login: input.ownLogin, source: "env" }] };
  const identities: TenantIdentity[] = [];
  const missing: string[] = [];
  for (const tenant of input.tokens.tenants()) {
    const login = input.tokens.loginOf(tenant);
    if (login) identities.push({ tenant, login, source: "tokens-file" });
    else if (tenant === input.ownTenant) identities.push({ tenant, login: input.ownLogin, source: "env" });
    else missing.push(tenant);
  }
  if (missing.length > 0) {
    return {
      ok: false,
      error:
        `tokens name tenant${missing.length > 1 ? "s" : ""} ${missing.join(", ")} with no NATS identity of ${missing.length > 1 ? "their" : "its"} own: ` +
        `give each a login under "tenants" in the tokens file (e.g. {"natsCreds": "/path/<tenant>-gateway.creds"}), ` +
        `or run the gateway with FLEET_TENANT=<tenant> and that tenant's gateway user in NATS_*` +
        (input.ownTenant ? ` (FLEET_TENANT is ${input.ownTenant})` : " (FLEET_TENANT is not set)"),
    };
  }
  return { ok: true, identities };
}

/** Checks every identity's settings now (files readable, one login each); the first error names the tenant and field. */
export function checkIdentities(identities: readonly TenantIdentity[]): string | undefined {
  for (const identity of identities) {
    const names =
      identity.source === "env"
        ? NATS_AUTH_ENV
        : (Object.fromEntries(
            Object.entries(TENANT_LOGIN_FIELDS).map(([key, field]) => [key, `tenants.${identity.tenant}.${field}`]),
          ) as Record<keyof NatsAuthSettings, string>);
    const built = buildNatsAuth(identity.login, names);
    if (!built.ok) return `tenant ${identity.tenant}: ${built.error}`;
  }
  return undefined;
}
