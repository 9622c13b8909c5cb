// Connecting the CLI to a deployment, with one-line errors that say where the URL came from.
import { FleetClient, isFleetError } from "../index.js";
import { CliError } from "./cli-error.js";
import { resolveNatsUrl } from "./stack-file.js";

export interface CliContext {
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** `--nats <url>` */
  natsUrl?: string | undefined;
}

export async function connectClient(ctx: CliContext, opts: { commandTimeoutMs?: number } = {}): Promise<FleetClient> {
  const { url, source } = ctx.natsUrl ? { url: ctx.natsUrl, source: "--nats" } : resolveNatsUrl(ctx.env, ctx.cwd);
  try {
    return await FleetClient.connect({
      natsUrl: url,
      name: "fleet-cli",
      connectTimeoutMs: 3_000,
      ...(opts.commandTimeoutMs !== undefined ? { commandTimeoutMs: opts.commandTimeoutMs } : {}),
    });
  } catch (err) {
    if (isFleetError(err) && err.code === "connection_refused") {
      const hint = source === "default" ? " (set NATS_URL or start the stack with `fleet up`)" : ` (from ${source})`;
      throw new CliError(`cannot reach NATS at ${url}${hint}`);
    }
    throw err;
  }
}
