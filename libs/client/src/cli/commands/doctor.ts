// `fleet doctor`: is this deployment healthy and ready, and if not, why.
import { checkServer, connectFleet, describeNatsAuth, NatsConnectError, redactUrl } from "@fleet/runtime";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Style } from "../ansi.js";
import { CliError } from "../cli-error.js";
import { resolveNatsAuth } from "../connect.js";
import { type DeploymentReport, inspectDeployment, isReady, type StorageReport } from "../inspect-deployment.js";
import { type CliIo, outStyle } from "../io.js";
import { probeRedis } from "../redis-probe.js";
import { resolveNatsUrl, resolveRedisUrl } from "../stack-file.js";

type Status = "ok" | "warn" | "fail";
interface Check {
  status: Status;
  title: string;
  details: string[];
}

/** Prints every check; exit code 0 when nothing failed (warnings allowed), else 1. */
export async function doctorCommand(io: CliIo, opts: { json?: boolean }): Promise<number> {
  const resolved = io.natsUrl ? { url: io.natsUrl, source: "--nats" } : resolveNatsUrl(io.env, io.cwd);
  // Only redacted URLs and the login's description (method, user, file paths) are printed.
  const nats = { ...resolved, url: redactUrl(resolved.url) };
  const redisTarget = resolveRedisUrl(io.env, io.cwd);
  const redis = { ...redisTarget, url: redactUrl(redisTarget.url) };
  const auth = resolveNatsAuth(io);
  const checks: Check[] = [];
  const denied: string[] = [];
  let nc: NatsConnection | undefined;
  try {
    ({ nc } = await connectFleet({
      role: "operator",
      url: resolved.url,
      name: "fleet-doctor",
      auth,
      maxReconnectAttempts: 0,
      timeoutMs: 3_000,
      onPermissionError: (line) => denied.push(line),
    }));
  } catch (err) {
    const cause = (err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : undefined;
    const title =
      err instanceof NatsConnectError && err.code === "unreachable"
        ? `NATS ${nats.url}: unreachable (${cause ?? (err as Error).message})`
        : (err as Error).message;
    if (opts.json) throw new CliError(title);
    checks.push({ status: "fail", title, details: [] });
  }
  let report: DeploymentReport | undefined;
  try {
    if (nc) {
      const server = await checkServer(nc);
      if (!server.ok) checks.push({ status: "fail", title: `NATS ${nats.url}: ${server.error}`, details: [] });
      else {
        checks.push({
          status: server.caps.gaps.length ? "warn" : "ok",
          title: `NATS ${nats.url} (${describeNatsAuth(auth)}): nats-server ${server.caps.version}, JetStream enabled`,
          details: server.caps.gaps.map((g) => `not available on this server (Fleet works without it): ${g}`),
        });
        report = await inspectDeployment(nc, await jetstreamManager(nc));
      }
    }
    const redisProbe = await probeRedis(redisTarget.url);
    checks.push(
      redisProbe.ok
        ? { status: "ok", title: `Redis ${redis.url}: redis ${redisProbe.version}`, details: [] }
        : { status: "fail", title: `Redis ${redis.url}: ${redisProbe.error}`, details: [] },
    );
    if (report) checks.push(...deploymentChecks(report));
    if (denied.length) {
      checks.push({
        status: "warn",
        title: "NATS refused some of the reads (this user's permissions)",
        details: denied,
      });
    }
  } finally {
    await nc?.close().catch(() => undefined);
  }
  const failed = checks.some((c) => c.status === "fail");
  if (opts.json) {
    io.stdout.write(`${JSON.stringify({ ok: !failed, ready: report ? isReady(report) : false, checks, report })}\n`);
    return failed ? 1 : 0;
  }
  const style = outStyle(io);
  for (const check of checks) {
    io.stdout.write(`${mark(check.status, style)} ${check.title}\n`);
    for (const detail of check.details) io.stdout.write(`    ${style.dim(detail)}\n`);
  }
  const ready = report !== undefined && isReady(report);
  io.stdout.write(ready ? `${style.green("ready")}\n` : `${style.red("not ready")}\n`);
  return failed ? 1 : 0;
}

function mark(status: Status, style: Style): string {
  return status === "ok" ? style.green("✓") : status === "warn" ? style.yellow("!") : style.red("✗");
}

/** The checks derived from a deployment report (pure). */
export function deploymentChecks(r: DeploymentReport): Check[] {
  const checks: Check[] = [];
  if (r.partitions === null) {
    checks.push({
      status: "fail",
      title: "fleet_config: no partition count (no service has started here yet)",
      details: [],
    });
  } else {
    checks.push({
      status: "ok",
      title: `fleet_config: ${r.partitions} partitions in ${r.groups} stream group(s), protocol ${r.protocol ?? "?"}`,
      details: [],
    });
  }
  const missing = r.streams.filter((s) => !s.exists);
  const drift = r.streams.flatMap((s) => s.drift);
  checks.push({
    status: missing.length ? "fail" : drift.length ? "warn" : "ok",
    title: `streams: ${r.streams.map((s) => (s.exists ? `${s.name} (${s.messages} msgs)` : `${s.name} MISSING`)).join(", ")}${drift.length ? "" : missing.length ? "" : "; no drift"}`,
    details: drift.map((d) => `drift: ${d}`),
  });
  for (const lease of r.leases) {
    const { total, unit } = lease;
    const holders = Object.entries(lease.holders).map(
      ([id, ps]) => `${id} holds ${ps.length} (${unit}${ps.join(`,${unit}`)})`,
    );
    checks.push({
      status: lease.unheld.length === 0 && total > 0 ? "ok" : "fail",
      title: `${lease.role} leases: ${lease.held}/${total} held${lease.unheld.length ? `; unheld: ${unit}${lease.unheld.join(`,${unit}`)}` : ""}`,
      details: holders.length ? holders : [`no live ${lease.role} worker`],
    });
  }
  const unserved = r.tools.filter((t) => t.runners.length === 0);
  checks.push({
    status: r.tools.length === 0 || unserved.length ? "fail" : "ok",
    title:
      r.tools.length === 0
        ? "tools: none registered in fleet_tools (no tool runner has started)"
        : `tools: ${r.tools.length} registered, ${r.workers.runners.length} live runner(s)${unserved.length ? `; no runner for ${unserved.map((t) => t.name).join(", ")}` : ""}`,
    details: r.tools.map(
      (t) =>
        `${t.name}: runners ${t.runners.join(", ") || "none"}; ${t.queued} queued, ${t.running} running${t.consumer ? "" : " (no consumer)"}`,
    ),
  });
  checks.push(
    r.storeLag === null
      ? { status: "fail", title: "store lag: no store consumer exists (the session store never started)", details: [] }
      : {
          status: r.storeConsumersMissing ? "warn" : "ok",
          title: `store lag: ${r.storeLag} event(s) not yet projected`,
          details: r.storeConsumersMissing ? [`${r.storeConsumersMissing} partition consumer(s) missing`] : [],
        },
  );
  checks.push(storageCheck(r.storage));
  if (r.commandBacklog !== null && r.commandBacklog > 0) {
    checks.push({ status: "warn", title: `commands: ${r.commandBacklog} waiting for a loop worker`, details: [] });
  }
  return checks;
}

const mb = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(1)} MB`;

/** Full: fail (commands are refused with `storage_full`, runs wait); 90 % of an account limit: warn. */
function storageCheck(s: StorageReport): Check {
  const used = s.usedBytes === null ? "use unknown" : `${mb(s.usedBytes)} used`;
  const of = s.limitBytes === null ? "" : ` of ${mb(s.limitBytes)} (account limit)`;
  if (s.full) {
    return {
      status: "fail",
      title: `storage: FULL, JetStream refuses writes (${used}${of}): commands are refused with storage_full and runs wait for space`,
      details: [
        ...(s.probeError ? [`probe write: ${s.probeError}`] : []),
        "free space on the server, or raise its max_file_store or the account's max_file; runs resume on their own",
      ],
    };
  }
  if (s.probeError) {
    return { status: "warn", title: `storage: ${used}${of}; could not probe a write`, details: [s.probeError] };
  }
  const high = s.usedBytes !== null && s.limitBytes !== null && s.usedBytes >= 0.9 * s.limitBytes;
  return { status: high ? "warn" : "ok", title: `storage: ${used}${of}; writes accepted`, details: [] };
}
