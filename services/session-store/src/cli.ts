// Session-store CLI: `serve`, `rebuild`, `verify`. Options override the environment (see config.ts).
import { applyTopology, checkServer, connectFleet, createLogger, natsAuthFromEnv, parseEnv } from "@fleet/runtime";
import { jetstream } from "@nats-io/jetstream";
import { Command, InvalidArgumentError } from "commander";
import { StoreEnv, storePrefixOf } from "./config.js";
import { type ReplayDeps, rebuild } from "./rebuild.js";
import { connectRedis, startStoreService } from "./store-service.js";
import { verify } from "./verify.js";

const parsed = parseEnv(StoreEnv);
if (!parsed.ok) {
  process.stderr.write(`session-store: ${parsed.error}\n`);
  process.exit(2);
}
const env = parsed.config;

const int = (name: string) => (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`${name} must be a non-negative integer`);
  return n;
};

interface Common {
  natsUrl: string;
  redisUrl: string;
  prefix: string;
}

const program = new Command()
  .name("session-store")
  .description("Fleet session store: Redis projection of FLEET_EVENTS and its queries")
  .option("--nats-url <url>", "NATS server(s), comma separated", env.NATS_URL)
  .option("--redis-url <url>", "Redis URL", env.REDIS_URL)
  .option("--prefix <prefix>", "prefix of every Redis key", storePrefixOf(env))
  .showHelpAfterError();

async function withConnections<T>(common: Common, run: (deps: ReplayDeps) => Promise<T>): Promise<T> {
  const logger = createLogger("session-store", { level: env.LOG_LEVEL });
  const { nc } = await connectFleet({
    role: "store",
    url: common.natsUrl,
    name: "fleet-store-cli",
    auth: natsAuthFromEnv(process.env),
    maxReconnectAttempts: 3,
    onPermissionError: (line) => process.stderr.write(`session-store: ${line}\n`),
  });
  const redis = connectRedis(common.redisUrl);
  try {
    const server = await checkServer(nc);
    if (!server.ok) throw new Error(server.error);
    const topology = await applyTopology(nc, {
      partitions: env.FLEET_PARTITIONS,
      groups: env.FLEET_STREAM_GROUPS,
      leaseTtlMs: env.FLEET_LEASE_TTL_MS,
      replicas: env.FLEET_STREAM_REPLICAS,
    });
    return await run({
      js: jetstream(nc),
      jsm: topology.jsm,
      redis,
      prefix: common.prefix,
      partitions: topology.partitions,
      groups: topology.groups,
      logger,
      cacheEntries: env.FLEET_STORE_CACHE_ENTRIES,
      maxBatch: env.FLEET_STORE_BATCH,
    });
  } finally {
    await nc.close().catch(() => undefined);
    await redis.quit().catch(() => undefined);
  }
}

program
  .command("serve")
  .description("project FLEET_EVENTS into Redis and answer fleet.store.<op> queries")
  .option("--worker-id <id>", "lease holder id (default: random)", env.FLEET_WORKER_ID)
  .option(
    "--ops-port <port>",
    "HTTP port of /healthz, /readyz, /metrics (0 = any)",
    int("ops port"),
    env.FLEET_OPS_PORT,
  )
  .action(async (opts: { workerId: string; opsPort: number }) => {
    const common = program.opts<Common>();
    const logger = createLogger("session-store", { level: env.LOG_LEVEL });
    const service = await startStoreService({
      natsUrl: common.natsUrl,
      natsAuth: natsAuthFromEnv(process.env),
      replicas: env.FLEET_STREAM_REPLICAS,
      opsHost: env.FLEET_OPS_HOST,
      redisUrl: common.redisUrl,
      prefix: common.prefix,
      workerId: opts.workerId,
      partitions: env.FLEET_PARTITIONS,
      groups: env.FLEET_STREAM_GROUPS,
      leaseTtlMs: env.FLEET_LEASE_TTL_MS,
      opsPort: opts.opsPort,
      cacheEntries: env.FLEET_STORE_CACHE_ENTRIES,
      maxBatch: env.FLEET_STORE_BATCH,
      logger,
    });
    await new Promise<void>((resolve) => {
      const stop = () => void service.stop().then(resolve, resolve);
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
    });
  });

program
  .command("rebuild")
  .description("replay the stream into a fresh key namespace, then switch to it atomically")
  .option("--grace-ms <ms>", "wait before deleting the old namespace", int("grace-ms"), 10_000)
  .option("--keep-old", "keep the old namespace's keys", false)
  .action(async (opts: { graceMs: number; keepOld: boolean }) => {
    const result = await withConnections(program.opts<Common>(), (deps) =>
      rebuild(deps, { graceMs: opts.graceMs, keepOld: opts.keepOld }),
    );
    process.stdout.write(
      `rebuild: namespace ${result.ns} replaces ${result.oldNs ?? "(none)"}; ${result.events} events through seq ` +
        `${result.lastSeq} in ${Math.round(result.ms)} ms; ${result.deletedKeys} old keys deleted\n`,
    );
  });

program
  .command("verify")
  .description("rebuild into a scratch namespace and diff it against the live projection")
  .option("--wait-ms <ms>", "how long a lagging live projection may take to catch up", int("wait-ms"), 10_000)
  .action(async (opts: { waitMs: number }) => {
    const result = await withConnections(program.opts<Common>(), (deps) => verify(deps, { waitMs: opts.waitMs }));
    for (const line of result.differences) process.stdout.write(`DIFF ${line}\n`);
    process.stdout.write(
      `verify: ${result.sessions} sessions through seq ${result.lastSeq}, ${result.differences.length} difference(s)\n`,
    );
    process.exitCode = result.differences.length === 0 ? 0 : 1;
  });

program.parseAsync(process.argv).catch((err: unknown) => {
  process.stderr.write(`session-store: ${(err as Error).message}\n`);
  process.exit(2);
});
