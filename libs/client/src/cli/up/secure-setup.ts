// `fleet up --secure`: an operator-mode deployment of two demo tenants, generated once into
// `.fleet/secure/` (or FLEET_SECURE_DIR) and reused: the server's trust, a creds file per tenant
// and role, and a gateway tokens file.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { DEFAULT_STREAM_GROUPS, DeploymentSpec, type FleetRole, userOf } from "@fleet/protocol";
import { createOperatorDeployment, writeCredsFiles } from "@fleet/runtime";
import { z } from "zod";
import { CliError } from "../cli-error.js";

/** The demo tenants, each its own NATS account. */
export const SECURE_TENANTS = ["acme", "globex"] as const;
const LIMITS = { maxMemory: "1GB", maxFile: "10GB", maxStreams: 32, maxConsumers: 4096 };

export interface SecureSetup {
  dir: string;
  /** The nats-server config (operator mode, memory resolver) to start the server with. */
  natsConf: string;
  /** The gateway's tokens file: a `read` and an `operate` token per tenant. */
  tokensFile: string;
  tenants: readonly string[];
  partitions: number;
  /** K, the event log's stream groups, that the users' permissions name. */
  groups: number;
  /** A user's creds file. */
  credsOf(tenant: string, role: FleetRole): string;
  /** Whether this run generated the files (else they were there). */
  created: boolean;
}

const Manifest = z.object({ spec: DeploymentSpec, tokensFile: z.string(), natsConf: z.string() });

/** `FLEET_SECURE_DIR`, else `<home>/secure`. */
export const secureDirOf = (env: NodeJS.ProcessEnv, cwd: string, home: string) =>
  env.FLEET_SECURE_DIR ? resolve(cwd, env.FLEET_SECURE_DIR) : join(home, "secure");

/**
 * Generates the deployment into `dir` unless `dir/deployment.json` exists, then reads it back. Throws a
 * CliError when the existing files were made for another partition count, or another K when `groups`
 * is given (unset: the files' K, or 1 for new files).
 */
export async function prepareSecureSetup(
  dir: string,
  partitions: number,
  groups: number | undefined,
): Promise<SecureSetup> {
  const manifestPath = join(dir, "deployment.json");
  let created = false;
  if (!existsSync(manifestPath)) {
    await generate(dir, partitions, groups ?? DEFAULT_STREAM_GROUPS);
    created = true;
  }
  const manifest = Manifest.safeParse(JSON.parse(readFileSync(manifestPath, "utf8")));
  if (!manifest.success) throw new CliError(`${manifestPath} is not a fleet up --secure manifest; remove ${dir}`);
  const { spec } = manifest.data;
  if (spec.partitions !== partitions) {
    throw new CliError(
      `${dir} was generated for ${spec.partitions} partitions (the users' permissions name them), not ${partitions}: ` +
        `set FLEET_PARTITIONS=${spec.partitions} or remove ${dir} (and its JetStream data) to start over`,
    );
  }
  const made = spec.groups ?? DEFAULT_STREAM_GROUPS;
  if (groups !== undefined && made !== groups) {
    throw new CliError(
      `${dir} was generated for ${made} stream group${made === 1 ? "" : "s"} (the users' permissions name their streams), not ${groups}: ` +
        `set FLEET_STREAM_GROUPS=${made} or remove ${dir} (and its JetStream data) to start over`,
    );
  }
  return {
    dir,
    natsConf: join(dir, manifest.data.natsConf),
    tokensFile: join(dir, manifest.data.tokensFile),
    tenants: spec.tenants.map((t) => t.name),
    partitions,
    groups: made,
    credsOf: (tenant, role) => join(dir, "creds", `${userOf(tenant, role)}.creds`),
    created,
  };
}

async function generate(dir: string, partitions: number, groups: number): Promise<void> {
  const spec: DeploymentSpec = {
    partitions,
    ...(groups === DEFAULT_STREAM_GROUPS ? {} : { groups }),
    tenants: SECURE_TENANTS.map((name) => ({ name, jetstream: LIMITS, audit: false })),
  };
  const made = await createOperatorDeployment(spec, { operatorName: "fleet-up" });
  if (!made.ok) throw new CliError(made.error);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const creds = writeCredsFiles(join(dir, "creds"), made.deployment);
  const secret = (file: string, text: string) => writeFileSync(join(dir, file), text, { mode: 0o600 });
  secret("nats.conf", made.deployment.serverConf);
  const token = () => randomBytes(24).toString("base64url");
  secret(
    "tokens.json",
    `${JSON.stringify(
      {
        tokens: SECURE_TENANTS.flatMap((tenant) =>
          (["read", "operate"] as const).map((role) => ({ token: `${tenant}-${role}-${token()}`, tenant, role })),
        ),
        tenants: Object.fromEntries(
          SECURE_TENANTS.map((tenant) => [tenant, { natsCreds: creds[userOf(tenant, "gateway")] }]),
        ),
      },
      null,
      2,
    )}\n`,
  );
  // Written last: its presence means the rest is complete.
  secret("deployment.json", `${JSON.stringify({ spec, tokensFile: "tokens.json", natsConf: "nats.conf" }, null, 2)}\n`);
}
