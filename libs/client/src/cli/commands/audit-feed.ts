// `fleet audit-feed <tenant>`: create (once) the mirrors of a tenant's event streams in an auditor account.
import { connectFleet, ensureAuditMirror } from "@fleet/runtime";
import { CliError } from "../cli-error.js";
import { resolveNatsAuth } from "../connect.js";
import type { CliIo } from "../io.js";
import { resolveNatsUrl } from "../stack-file.js";

/**
 * Run with the audit account's `<tenant>-audit-admin` login. Exit 0 when the mirrors exist. The
 * audit account cannot read the tenant's `fleet_config`: K comes from FLEET_STREAM_GROUPS (default 1).
 */
export async function auditFeedCommand(io: CliIo, tenant: string): Promise<number> {
  const groups = io.env.FLEET_STREAM_GROUPS ? Number(io.env.FLEET_STREAM_GROUPS) : 1;
  if (!Number.isInteger(groups) || groups < 1) {
    throw new CliError(
      `FLEET_STREAM_GROUPS must be a positive integer (got ${JSON.stringify(io.env.FLEET_STREAM_GROUPS)})`,
    );
  }
  const url = io.natsUrl ?? resolveNatsUrl(io.env, io.cwd).url;
  const { nc } = await connectFleet({
    role: "audit-admin",
    url,
    name: "fleet-audit-feed",
    auth: resolveNatsAuth(io),
    maxReconnectAttempts: 0,
    onPermissionError: (line) => io.stderr.write(`fleet: ${line}\n`),
  }).catch((err: Error) => {
    throw new CliError(err.message);
  });
  try {
    const result = await ensureAuditMirror(nc, tenant, groups);
    if (!result.ok) throw new CliError(`audit feed of ${tenant}: ${result.error}`);
    io.stdout.write(
      `audit feed of ${tenant}: ${result.created ? "mirror created" : "mirror exists"}${groups > 1 ? ` (${groups} stream groups)` : ""}, ${result.messages} events so far\n`,
    );
    return 0;
  } finally {
    await nc.close().catch(() => undefined);
  }
}
