// Connecting the CLI to a deployment, with one-line errors that say where the URL came from.
import { type NatsAuthSettings, natsAuthFromEnv, redactUrl } from "@fleet/runtime";
import { FleetClient, isFleetError } from "../index.js";
import { CliError } from "./cli-error.js";
import type { CliIo } from "./io.js";
import { findStack, resolveNatsUrl } from "./stack-file.js";

export interface CliContext {
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** `--nats <url>` */
  natsUrl?: string | undefined;
  /** `--creds`, `--nkey`, `--user`, `--password`, `--token`, `--tls-*`; each overrides its NATS_* variable. */
  authFlags?: NatsAuthSettings | undefined;
}

/** The login settings: the NATS_* variables, each overridden by its flag. */
export function resolveNatsAuth(ctx: CliContext): NatsAuthSettings {
  const flags = Object.fromEntries(Object.entries(ctx.authFlags ?? {}).filter(([, v]) => v));
  return { ...natsAuthFromEnv(ctx.env), ...flags };
}

export async function connectClient(ctx: CliContext, opts: { commandTimeoutMs?: number } = {}): Promise<FleetClient> {
  const { url, source } = ctx.natsUrl ? { url: ctx.natsUrl, source: "--nats" } : resolveNatsUrl(ctx.env, ctx.cwd);
  try {
    return await FleetClient.connect({
      natsUrl: url,
      name: "fleet-cli",
      auth: resolveNatsAuth(ctx),
      // An audit account has no fleet_config: its users give P (FLEET_PARTITIONS) themselves.
      ...(/^[1-9]\d*$/.test(ctx.env.FLEET_PARTITIONS ?? "") ? { partitions: Number(ctx.env.FLEET_PARTITIONS) } : {}),
      onPermissionError: (line) => process.stderr.write(`fleet: ${line}\n`),
      connectTimeoutMs: 3_000,
      ...(opts.commandTimeoutMs !== undefined ? { commandTimeoutMs: opts.commandTimeoutMs } : {}),
    });
  } catch (err) {
    if (isFleetError(err) && err.code === "connection_refused") {
      const hint = source === "default" ? " (set NATS_URL or start the stack with `fleet up`)" : ` (from ${source})`;
      throw new CliError(`cannot reach NATS at ${redactUrl(url)}${hint}`);
    }
    if (isFleetError(err) && (err.code === "login_refused" || err.code === "nats_auth")) {
      const secure = source === "--nats" ? undefined : findStack(ctx.env, ctx.cwd)?.stack.secure;
      const hint = secure
        ? ` (fleet up --secure: log in as a tenant's user, e.g. NATS_CREDS=${secure.dir}/creds/acme-operator.creds)`
        : "";
      throw new CliError(`${err.message}${hint}`);
    }
    throw err;
  }
}

/** Runs `fn` with a client connected for `io`, closed afterwards. */
export async function withClient<T>(io: CliIo, fn: (client: FleetClient) => Promise<T>): Promise<T> {
  const client = await connectClient(io);
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}
