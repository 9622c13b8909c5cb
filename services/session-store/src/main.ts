// The session-store service: `serve` with its configuration from the environment.
import { createLogger, loadEnvOrExit, natsAuthFromEnv } from "@fleet/runtime";
import { StoreEnv, storePrefixOf } from "./config.js";
import { startStoreService } from "./store-service.js";

const env = loadEnvOrExit("session-store", StoreEnv);
const root = createLogger("session-store", { level: env.LOG_LEVEL });
const logger = env.FLEET_TENANT ? root.child({ tenant: env.FLEET_TENANT }) : root;

const service = await startStoreService({
  natsUrl: env.NATS_URL,
  natsAuth: natsAuthFromEnv(process.env),
  replicas: env.FLEET_STREAM_REPLICAS,
  opsHost: env.FLEET_OPS_HOST,
  redisUrl: env.REDIS_URL,
  prefix: storePrefixOf(env),
  workerId: env.FLEET_WORKER_ID,
  partitions: env.FLEET_PARTITIONS,
  groups: env.FLEET_STREAM_GROUPS,
  leaseTtlMs: env.FLEET_LEASE_TTL_MS,
  opsPort: env.FLEET_OPS_PORT,
  cacheEntries: env.FLEET_STORE_CACHE_ENTRIES,
  healCheckMs: env.FLEET_STORE_HEAL_CHECK_MS,
  maxBatch: env.FLEET_STORE_BATCH,
  logger,
}).catch((err: unknown) => {
  logger.fatal({ evt: "store_start_failed", err }, "session store failed to start");
  process.stderr.write(`session-store: ${(err as Error).message}\n`);
  process.exit(1);
});

let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    void service.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ evt: "store_stop_failed", err }, "shutdown failed");
        process.exit(1);
      },
    );
  });
}
