// `fleet audit-feed <tenant>`: create (once) the mirror of a tenant's events in an auditor account.
import { connectFleet, ensureAuditMirror } from "@fleet/runtime";
import { CliError } from "../cli-error.js";
import { resolveNatsAuth } from "../connect.js";
import type { CliIo } from "../io.js";
import { resolveNatsUrl } from "../stack-file.js";

/** Run with the audit account's `<tenant>-audit-admin` login. Exit 0 when the mirror exists. */
export async function auditFeedCommand(io: CliIo, tenant: string): Promise<number> {
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
    const result = await ensureAuditMirror(nc, tenant);
    if (!result.ok) throw new CliError(`audit feed of ${tenant}: ${result.error}`);
    io.stdout.write(
      `audit feed of ${tenant}: ${result.created ? "mirror created" : "mirror exists"}, ${result.messages} events so far\n`,
    );
    return 0;
  } finally {
    await nc.close().catch(() => undefined);
  }
}
