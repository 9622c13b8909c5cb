// A nats-server running the generated accounts (one account per tenant, one user per role), and a
// tenant's services as separate processes, each logged in as its own user.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type DeploymentSpec,
  type FleetRole,
  passwordVarOf,
  passwordVars,
  renderAccountsConf,
  userOf,
} from "@fleet/protocol";
import {
  connectFleet,
  createOperatorDeployment,
  type NatsAuthSettings,
  type OperatorDeployment,
  writeCredsFiles,
} from "@fleet/runtime";
import {
  createTestCertificates,
  getFreePort,
  type NatsServer,
  natsTlsConfig,
  startNats,
  type TestCertificates,
} from "@fleet/testkit";
import type { NatsConnection } from "@nats-io/transport-node";
import { type ServiceProcess, spawnService } from "../support/service-process.js";

export const PARTITIONS = 4;
const LIMITS = { maxMemory: "256MB", maxFile: "1GB", maxStreams: 24, maxConsumers: 256 };

export interface SecuredNats {
  nats: NatsServer;
  spec: DeploymentSpec;
  /** A role's login: its user and password. */
  auth(tenant: string, role: FleetRole): NatsAuthSettings;
  /** The same as NATS_USER / NATS_PASSWORD for a service process. */
  env(tenant: string, role: FleetRole): { NATS_USER: string; NATS_PASSWORD: string };
  /** Connects as a role; every permission violation line lands in `denied`. */
  connectAs(tenant: string, role: FleetRole): Promise<{ nc: NatsConnection; denied: string[] }>;
  stop(): Promise<void>;
}

/**
 * Starts nats-server with `renderAccountsConf` for the tenants, with fresh random passwords; `groups`:
 * the K that the permissions and audit feeds name (default 1).
 */
export async function startSecuredNats(
  tenants: { name: string; audit?: boolean }[],
  opts: { groups?: number } = {},
): Promise<SecuredNats> {
  const spec: DeploymentSpec = {
    partitions: PARTITIONS,
    ...(opts.groups ? { groups: opts.groups } : {}),
    tenants: tenants.map((t) => ({ name: t.name, jetstream: LIMITS, audit: t.audit ?? false })),
  };
  // nats-server parses a variable's value as a config token: a password must start with a letter.
  const passwords = Object.fromEntries(passwordVars(spec).map((v) => [v, `pw${randomBytes(18).toString("hex")}`]));
  const nats = await startNats({ config: renderAccountsConf(spec), env: passwords });
  const auth = (tenant: string, role: FleetRole): NatsAuthSettings => ({
    user: userOf(tenant, role),
    password: passwords[passwordVarOf(tenant, role)] ?? "",
  });
  const opened: NatsConnection[] = [];
  return {
    nats,
    spec,
    auth,
    env: (tenant, role) => ({ NATS_USER: userOf(tenant, role), NATS_PASSWORD: auth(tenant, role).password ?? "" }),
    async connectAs(tenant, role) {
      const denied: string[] = [];
      const { nc } = await connectFleet({
        role,
        url: nats.url,
        name: `test-${userOf(tenant, role)}`,
        auth: auth(tenant, role),
        maxReconnectAttempts: 0,
        onPermissionError: (line) => denied.push(line),
      });
      opened.push(nc);
      return { nc, denied };
    },
    async stop() {
      await Promise.all(opened.map((nc) => nc.close().catch(() => undefined)));
      await nats.stop();
    },
  };
}

export interface OperatorNats {
  nats: NatsServer;
  deployment: OperatorDeployment;
  /** The CA the server's certificate is signed by (clients pass it as NATS_TLS_CA). */
  certs: TestCertificates;
  /** A user's creds file. */
  credsOf(tenant: string, role: FleetRole): string;
  /** A user's login: its creds file, and the CA (the server requires TLS). */
  auth(tenant: string, role: FleetRole): NatsAuthSettings;
  logins: DeploymentLogins;
  stop(): Promise<void>;
}

/**
 * nats-server in operator mode (`createOperatorDeployment`: JWTs in a memory resolver, a creds file
 * per user) and TLS: every client must log in with a creds file over TLS.
 */
export async function startOperatorNats(tenants: string[]): Promise<OperatorNats> {
  const spec: DeploymentSpec = {
    partitions: PARTITIONS,
    tenants: tenants.map((name) => ({ name, jetstream: LIMITS, audit: false })),
  };
  const created = await createOperatorDeployment(spec);
  if (!created.ok) throw new Error(created.error);
  const dir = mkdtempSync(join(tmpdir(), "fleet-operator-"));
  const creds = writeCredsFiles(join(dir, "creds"), created.deployment);
  const certs = createTestCertificates(dir);
  const nats = await startNats({
    config: `${created.deployment.serverConf}\n${natsTlsConfig(certs, { verify: false })}`,
    monitor: true,
  });
  const credsOf = (tenant: string, role: FleetRole) => creds[userOf(tenant, role)] ?? "";
  return {
    nats,
    deployment: created.deployment,
    certs,
    credsOf,
    auth: (tenant, role) => ({ creds: credsOf(tenant, role), tlsCa: certs.ca }),
    logins: {
      natsUrl: nats.url,
      env: (tenant, role) => ({ NATS_CREDS: credsOf(tenant, role), NATS_TLS_CA: certs.ca }),
    },
    async stop() {
      await nats.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface TenantServices {
  /** The tool runner's ops port; it listens on every interface (FLEET_OPS_HOST=0.0.0.0). */
  toolsOpsPort: number;
  loop: ServiceProcess;
  tools: ServiceProcess;
  store: ServiceProcess;
  stop(): Promise<void>;
}

/** Where the services of a deployment connect, and each user's login as NATS_* variables. */
export interface DeploymentLogins {
  natsUrl: string;
  env(tenant: string, role: FleetRole): Record<string, string>;
}

export const loginsOf = (secured: SecuredNats): DeploymentLogins => ({ natsUrl: secured.nats.url, env: secured.env });

/** The loop, a tool runner and a session store of one tenant, each a process logged in as its own user. */
export async function startTenantServices(
  deployment: DeploymentLogins,
  tenant: string,
  opts: { redisUrl: string; anthropicUrl: string; workspace: string; loopEnv?: Record<string, string> },
): Promise<TenantServices> {
  const toolsOpsPort = await getFreePort();
  const common = { NATS_URL: deployment.natsUrl, FLEET_TENANT: tenant, FLEET_PARTITIONS: String(PARTITIONS) };
  const store = spawnService("store", { ...common, ...deployment.env(tenant, "store"), REDIS_URL: opts.redisUrl });
  const tools = spawnService("tools", {
    ...common,
    ...deployment.env(tenant, "tools"),
    FLEET_WORKSPACE: opts.workspace,
    FLEET_TOOLS: "read,write,ls",
    FLEET_OPS_HOST: "0.0.0.0",
    FLEET_OPS_PORT: String(toolsOpsPort),
  });
  const loop = spawnService("loop", {
    ...common,
    ...deployment.env(tenant, "loop"),
    ANTHROPIC_API_KEY: "sk-test",
    ANTHROPIC_BASE_URL: opts.anthropicUrl,
    FLEET_DEFAULT_MODEL: "claude-test",
    FLEET_COALESCE_MS: "10",
    ...opts.loopEnv,
  });
  const all = [store, tools, loop];
  const stop = async () => {
    await Promise.all(all.map((s) => s.stop()));
  };
  try {
    await Promise.all(all.map((s) => s.waitForLog()));
  } catch (err) {
    await stop();
    throw err;
  }
  return { toolsOpsPort, loop, tools, store, stop };
}
