// Operator mode (decentralized JWT auth): the claims of a Fleet deployment's accounts and users, and
// the nats-server config that trusts them (pure; keys and signatures are made by @fleet/runtime).
import type { DeploymentSpec, TenantSpec } from "./nats-accounts.js";
import type { RolePermissions } from "./permissions.js";

const UNITS: Record<string, number> = { "": 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3, T: 1024 ** 4 };

/** A nats-server size (`512MB`, `10GB`, `1024`) in bytes. */
export function sizeInBytes(size: string): number {
  const match = /^(\d+)(K|M|G|T)?B?$/.exec(size);
  if (!match) throw new TypeError(`not a nats-server size: ${size}`);
  return Number(match[1]) * (UNITS[match[2] ?? ""] ?? 1);
}

/**
 * The `nats` claims of a tenant's account JWT: its JetStream limits (as `accounts.conf` sets them),
 * nothing else limited. Exports and imports (audit feeds) are not part of operator mode.
 */
export function accountClaimsOf(tenant: Pick<TenantSpec, "jetstream">) {
  const js = tenant.jetstream;
  return {
    limits: {
      subs: -1,
      data: -1,
      payload: -1,
      imports: -1,
      exports: -1,
      wildcards: true,
      conn: -1,
      leaf: -1,
      mem_storage: sizeInBytes(js.maxMemory),
      disk_storage: sizeInBytes(js.maxFile),
      streams: js.maxStreams,
      consumer: js.maxConsumers,
    },
  };
}

/** The `nats` claims of the system account: no JetStream. */
export const SYSTEM_ACCOUNT_CLAIMS = {
  limits: { subs: -1, data: -1, payload: -1, imports: -1, exports: -1, wildcards: true, conn: -1, leaf: -1 },
};

/**
 * A role's permissions as user JWT claims: the same allow and deny lists as `accounts.conf`, and
 * `allow_responses` as one reply per request with no time limit.
 */
export function userClaimsOf(perms: RolePermissions) {
  return {
    pub: { allow: perms.publish.allow, deny: perms.publish.deny },
    sub: { allow: perms.subscribe.allow, deny: perms.subscribe.deny },
    ...(perms.allowResponses ? { resp: { max: 1, ttl: 0 } } : {}),
  };
}

/** Operator mode refuses tenants with an audit feed (its exports need activation tokens). */
export function operatorModeProblem(spec: DeploymentSpec): string | undefined {
  const audited = spec.tenants.filter((t) => t.audit).map((t) => t.name);
  return audited.length
    ? `operator mode does not set up audit feeds yet (tenants ${audited.join(", ")}); use accounts.conf`
    : undefined;
}

/** The signed JWTs a server in operator mode trusts. */
export interface OperatorTrust {
  operatorJwt: string;
  /** Public key (`A…`) of the system account. */
  systemAccount: string;
  /** Every account, the system account included. */
  accounts: readonly { publicKey: string; jwt: string }[];
}

/**
 * The auth part of a nats-server config in operator mode, with the accounts preloaded into a memory
 * resolver (the server then knows exactly these accounts; a new one needs a new config).
 */
export function renderOperatorConf(trust: OperatorTrust): string {
  return [
    "# Operator mode: every login is a user JWT signed by an account of this operator (creds files).",
    `operator: ${JSON.stringify(trust.operatorJwt)}`,
    `system_account: ${trust.systemAccount}`,
    "resolver: MEMORY",
    "resolver_preload: {",
    ...trust.accounts.map((a) => `  ${a.publicKey}: ${JSON.stringify(a.jwt)}`),
    "}",
    "",
  ].join("\n");
}
