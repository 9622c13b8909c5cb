// Writes fresh NATS passwords for deploy/nats/tenants.json into deploy/secrets/ (git-ignored), for
// compose (env files) and Kubernetes (Secrets): `npm run deploy:secrets`. Keeps existing files.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AUDIT_ROLES, type FleetRole, passwordVarOf, passwordVars, TENANT_ROLES, userOf } from "@fleet/protocol";
import { stringify } from "yaml";
import { REPO_ROOT, readDeploymentSpec } from "./deploy-files.js";

const dir = join(REPO_ROOT, "deploy", "secrets");
if (existsSync(join(dir, "nats.env")) && !process.argv.includes("--force")) {
  console.log(`${dir} already holds secrets; pass --force to replace them`);
  process.exit(0);
}
const spec = readDeploymentSpec();
// nats-server parses a variable's value as a config token: a password must start with a letter.
const passwords = Object.fromEntries(passwordVars(spec).map((v) => [v, `p${randomBytes(24).toString("hex")}`]));
mkdirSync(dir, { recursive: true, mode: 0o700 });
const write = (name: string, text: string) => writeFileSync(join(dir, name), text, { mode: 0o600 });
const envFile = (vars: Record<string, string>) =>
  Object.entries(vars)
    .map(([k, v]) => `${k}=${v}\n`)
    .join("");

write("nats.env", envFile(passwords));
const secrets: object[] = [
  { apiVersion: "v1", kind: "Secret", metadata: { name: "fleet-nats-passwords" }, stringData: passwords },
];
for (const tenant of spec.tenants) {
  const roles: FleetRole[] = [...TENANT_ROLES, ...(tenant.audit ? AUDIT_ROLES : [])];
  const byRole: Record<string, string> = {};
  for (const role of roles) {
    const password = passwords[passwordVarOf(tenant.name, role)] ?? "";
    byRole[role] = password;
    write(
      `${userOf(tenant.name, role)}.env`,
      envFile({ NATS_USER: userOf(tenant.name, role), NATS_PASSWORD: password }),
    );
  }
  secrets.push({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: `fleet-${tenant.name}-nats` },
    stringData: byRole,
  });
  // The tenant's gateway: one read and one operate bearer token, its own NATS login (FLEET_TENANT).
  const tokens = `${JSON.stringify(
    {
      tokens: (["read", "operate"] as const).map((role) => ({
        token: `${tenant.name}-${role}-${randomBytes(24).toString("base64url")}`,
        tenant: tenant.name,
        role,
      })),
    },
    null,
    2,
  )}\n`;
  // Readable by the container's user (node, uid 1000) through the bind mount; the folder is 0700.
  writeFileSync(join(dir, `${tenant.name}-gateway-tokens.json`), tokens, { mode: 0o644 });
  secrets.push({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: `fleet-${tenant.name}-gateway-tokens` },
    stringData: { "tokens.json": tokens },
  });
}
write("k8s-secrets.yaml", secrets.map((s) => stringify(s)).join("---\n"));
console.log(`wrote ${dir}: nats.env, one <tenant>-<role>.env per user, <tenant>-gateway-tokens.json, k8s-secrets.yaml`);
