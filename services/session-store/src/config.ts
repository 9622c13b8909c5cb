import { envInt, envString } from "@fleet/runtime";
import { z } from "zod";

/** Every session-store setting, from the environment, with its default. */
export const StoreEnv = z.object({
  NATS_URL: envString("nats://127.0.0.1:4222"),
  REDIS_URL: envString("redis://127.0.0.1:6379"),
  /** Prefix of every Redis key the store writes. */
  FLEET_STORE_PREFIX: envString("fleet:store"),
  FLEET_WORKER_ID: envString(""),
  /** Written to `fleet_config.partitions` only when no service wrote it yet. */
  FLEET_PARTITIONS: envInt(16, 1, 4096),
  FLEET_LEASE_TTL_MS: envInt(5_000, 500, 600_000),
  FLEET_OPS_PORT: envInt(0, 0, 65_535),
  /** Upper bound of entries held by the in-memory tree cache. */
  FLEET_STORE_CACHE_ENTRIES: envInt(2_000_000, 1_000, 1_000_000_000),
  /** Most events applied per batch and partition (at most half the consumer's max_ack_pending, 20,000). */
  FLEET_STORE_BATCH: envInt(10_000, 1, 10_000),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
});
export type StoreEnv = z.infer<typeof StoreEnv>;
