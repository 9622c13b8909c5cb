import { envInt, envString, serviceEnvFields, topologyEnvFields } from "@fleet/runtime";
import { z } from "zod";

/** Every session-store setting, from the environment, with its default. */
export const StoreEnv = z.object({
  ...serviceEnvFields,
  REDIS_URL: envString("redis://127.0.0.1:6379"),
  /**
   * Prefix of every Redis key the store writes. Default `fleet:store`, or `fleet:<tenant>:store` with
   * FLEET_TENANT, so the stores of several tenants can share one Redis without reading each other's keys.
   */
  FLEET_STORE_PREFIX: envString(""),
  FLEET_WORKER_ID: envString(""),
  /** Written to `fleet_config.partitions` only when no service wrote it yet. */
  ...topologyEnvFields,
  /** Upper bound of entries held by the in-memory tree cache. */
  FLEET_STORE_CACHE_ENTRIES: envInt(2_000_000, 1_000, 1_000_000_000),
  /** Most events applied per batch and stream group (at most half the consumer's max_ack_pending, 100,000). */
  FLEET_STORE_BATCH: envInt(50_000, 1, 50_000),
  /** How often an instance reads the namespace control record (a lost namespace, a shared rebuild's groups). */
  FLEET_STORE_HEAL_CHECK_MS: envInt(1_000, 50, 60_000),
});
export type StoreEnv = z.infer<typeof StoreEnv>;

/** The Redis key prefix: FLEET_STORE_PREFIX, else one per tenant. */
export const storePrefixOf = (env: Pick<StoreEnv, "FLEET_STORE_PREFIX" | "FLEET_TENANT">) =>
  env.FLEET_STORE_PREFIX || (env.FLEET_TENANT ? `fleet:${env.FLEET_TENANT}:store` : "fleet:store");
