// Operator mode: fresh keys for an operator, one account per tenant and one user per role, signed
// into JWTs and creds files (`@nats-io/jwt`), with the server config that trusts them.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  accountClaimsOf,
  accountOf,
  type DeploymentSpec,
  type FleetRole,
  type OperatorTrust,
  operatorModeProblem,
  renderOperatorConf,
  rolePermissions,
  SYSTEM_ACCOUNT_CLAIMS,
  TENANT_ROLES,
  userClaimsOf,
  userOf,
} from "@fleet/protocol";
import { encodeAccount, encodeOperator, encodeUser, fmtCreds, newScopedSigner } from "@nats-io/jwt";
import { createAccount, createOperator, createUser } from "@nats-io/nkeys";

/** A generated deployment: what the server trusts, and a creds file per user. */
export interface OperatorDeployment {
  trust: OperatorTrust;
  /** `renderOperatorConf(trust)`: include it in the server's config. */
  serverConf: string;
  /** Each tenant's account public key (`A…`), by tenant. */
  accounts: Record<string, string>;
  /** Creds file contents (user JWT and seed; secrets), by user name (`acme-loop`). */
  creds: Record<string, Uint8Array>;
}

/** The users `createOperatorDeployment` makes in every tenant's account. */
export const OPERATOR_MODE_ROLES: readonly FleetRole[] = TENANT_ROLES;

/**
 * Generates new keys and signs: the operator; a system account; per tenant an account (its JetStream
 * limits) with one user per role. A role's permissions (`rolePermissions`) are the template of a
 * scoped signing key of the account, and its user is signed with that key: the user JWT stays small
 * (the permissions of a role run to kilobytes, over nats-server's 4 KiB CONNECT line), and the
 * server applies the account's template, never anything the user JWT says. Errors are data.
 */
export async function createOperatorDeployment(
  spec: DeploymentSpec,
  opts: { operatorName?: string } = {},
): Promise<{ ok: true; deployment: OperatorDeployment } | { ok: false; error: string }> {
  const problem = operatorModeProblem(spec);
  if (problem) return { ok: false, error: problem };
  const operator = createOperator();
  const system = createAccount();
  const operatorJwt = await encodeOperator(opts.operatorName ?? "fleet", operator, {
    system_account: system.getPublicKey(),
  });
  const accounts: OperatorTrust["accounts"][number][] = [
    {
      publicKey: system.getPublicKey(),
      jwt: await encodeAccount("SYS", system, SYSTEM_ACCOUNT_CLAIMS, { signer: operator }),
    },
  ];
  const accountKeys: Record<string, string> = {};
  const creds: Record<string, Uint8Array> = {};
  for (const tenant of spec.tenants) {
    const account = createAccount();
    accountKeys[tenant.name] = account.getPublicKey();
    const roleKeys = OPERATOR_MODE_ROLES.map((role) => ({ role, key: createAccount() }));
    const signingKeys = roleKeys.map(({ role, key }) =>
      newScopedSigner(
        key,
        role,
        userClaimsOf(rolePermissions(role, { partitions: spec.partitions, groups: spec.groups ?? 1 })),
      ),
    );
    accounts.push({
      publicKey: account.getPublicKey(),
      jwt: await encodeAccount(
        accountOf(tenant.name),
        account,
        { ...accountClaimsOf(tenant), signing_keys: signingKeys },
        { signer: operator },
      ),
    });
    for (const { role, key } of roleKeys) {
      const user = createUser();
      const jwt = await encodeUser(userOf(tenant.name, role), user, account, {}, { signer: key, scopedUser: true });
      creds[userOf(tenant.name, role)] = fmtCreds(jwt, user);
    }
  }
  const trust: OperatorTrust = { operatorJwt, systemAccount: system.getPublicKey(), accounts };
  return { ok: true, deployment: { trust, serverConf: renderOperatorConf(trust), accounts: accountKeys, creds } };
}

/** Writes `<dir>/<user>.creds` for every user (mode 0600, the folder 0700); returns the paths by user. */
export function writeCredsFiles(dir: string, deployment: OperatorDeployment): Record<string, string> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const paths: Record<string, string> = {};
  for (const [user, bytes] of Object.entries(deployment.creds)) {
    const path = join(dir, `${user}.creds`);
    writeFileSync(path, bytes, { mode: 0o600 });
    paths[user] = path;
  }
  return paths;
}
