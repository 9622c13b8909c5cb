import { z } from "zod";
import { natsAuthEnvFields } from "./nats-auth.js";

/**
 * Parses `process.env` (or a given record) with a zod object schema. Returns the typed config or one
 * clear message per bad variable; services print it and exit non-zero.
 */
export function parseEnv<S extends z.ZodObject>(
  schema: S,
  env: Record<string, string | undefined> = process.env,
): { ok: true; config: z.infer<S> } | { ok: false; error: string } {
  const result = schema.safeParse(env);
  if (result.success) return { ok: true, config: result.data };
  const lines = result.error.issues.map((i) => {
    const name = i.path.join(".");
    const got = name ? env[name] : undefined;
    return `${name || "environment"}: ${i.message}${got !== undefined ? ` (got ${JSON.stringify(got)})` : ""}`;
  });
  return { ok: false, error: `invalid configuration:\n  ${lines.join("\n  ")}` };
}

/** An integer setting within bounds; `unset` when the variable is unset or empty. */
const envIntOr = <T extends number | undefined>(unset: T, min: number, max: number) =>
  z
    .string()
    .optional()
    .transform((v, ctx): number | T => {
      if (v === undefined || v === "") return unset;
      const n = Number(v);
      if (!Number.isInteger(n) || n < min || n > max) {
        ctx.addIssue({ code: "custom", message: `must be an integer between ${min} and ${max}` });
        return z.NEVER;
      }
      return n;
    });

/** Common environment fields: an integer with a default and bounds. */
export const envInt = (def: number, min = 0, max = Number.MAX_SAFE_INTEGER) => envIntOr(def, min, max);

/** An integer setting that may be left unset (`undefined`): a value only the first writer decides. */
export const envOptionalInt = (min = 0, max = Number.MAX_SAFE_INTEGER) => envIntOr(undefined, min, max);

export const envString = (def: string) =>
  z
    .string()
    .optional()
    .transform((v) => (v === undefined || v === "" ? def : v));

export const envBool = (def: boolean) =>
  z
    .enum(["1", "0", "true", "false", "yes", "no", ""])
    .optional()
    .transform((v) => (v === undefined || v === "" ? def : ["1", "true", "yes"].includes(v)));

/** Exits the process with the message when the config is invalid (for `main.ts` only). */
export function loadEnvOrExit<S extends z.ZodObject>(service: string, schema: S): z.infer<S> {
  const parsed = parseEnv(schema);
  if (parsed.ok) return parsed.config;
  process.stderr.write(`${service}: ${parsed.error}\n`);
  process.exit(2);
}

export const envLogLevel = () => z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info");

/**
 * The NATS side of every Fleet process that serves a tenant (the services and the gateway): where
 * NATS is and how to log in (NATS_CREDS, NATS_NKEY, NATS_USER + NATS_PASSWORD, NATS_TOKEN,
 * NATS_TLS_*), which tenant it serves, the replica count of the streams and buckets it creates, and
 * the log level.
 */
export const natsServiceEnvFields = {
  NATS_URL: envString("nats://127.0.0.1:4222"),
  ...natsAuthEnvFields,
  /**
   * The tenant this process serves (its NATS user belongs to the tenant's account). Labels logs, and
   * keeps tenants apart where they share more than NATS: the store's Redis keys, the runners' workspaces.
   */
  FLEET_TENANT: z
    .string()
    .regex(/^([a-z][a-z0-9_]{0,31})?$/, "lowercase letters, digits and _, starting with a letter")
    .optional()
    .transform((v) => v || undefined),
  /** Replicas of the streams and buckets this service creates: 1 on one server, 3 on the cluster. */
  FLEET_STREAM_REPLICAS: envInt(1, 1, 5),
  LOG_LEVEL: envLogLevel(),
};

/**
 * The topology settings every service that provisions Fleet's topology reads (loop, store, tool
 * runner): whichever service starts first creates `fleet_config.partitions`, `stream_groups` and
 * the `fleet_leases` bucket's TTL from the same values (`topologyFromEnv`). P and K are fixed once
 * written: unset, a service takes the log's; set to another value, it refuses to start.
 */
export const topologyEnvFields = {
  /** P, written to `fleet_config.partitions` by the first service to start (default 16); fixed once written. */
  FLEET_PARTITIONS: envOptionalInt(1, 4096),
  /** K, the number of event streams, written to `fleet_config.stream_groups` (default 1); fixed once written. */
  FLEET_STREAM_GROUPS: envOptionalInt(1, 4096),
  /** TTL of `fleet_leases` (partition leases, worker and runner presence). */
  FLEET_LEASE_TTL_MS: envInt(5_000, 500, 600_000),
};

/** `applyTopology`'s settings from the environment: the one source of P, K, lease TTL and replicas. */
export function topologyFromEnv(env: {
  FLEET_PARTITIONS: number | undefined;
  FLEET_STREAM_GROUPS: number | undefined;
  FLEET_LEASE_TTL_MS: number;
  FLEET_STREAM_REPLICAS: number;
}): { partitions?: number; groups?: number; leaseTtlMs: number; replicas: number } {
  return {
    ...(env.FLEET_PARTITIONS !== undefined ? { partitions: env.FLEET_PARTITIONS } : {}),
    ...(env.FLEET_STREAM_GROUPS !== undefined ? { groups: env.FLEET_STREAM_GROUPS } : {}),
    leaseTtlMs: env.FLEET_LEASE_TTL_MS,
    replicas: env.FLEET_STREAM_REPLICAS,
  };
}

/** The settings every Fleet worker service reads: `natsServiceEnvFields` and its ops server. */
export const serviceEnvFields = {
  ...natsServiceEnvFields,
  /** `/healthz`, `/readyz`, `/metrics`: the interface (0.0.0.0 in containers) and port (0 = any free one). */
  FLEET_OPS_HOST: envString("127.0.0.1"),
  FLEET_OPS_PORT: envInt(0, 0, 65_535),
};
