import { envInt, envString, natsServiceEnvFields } from "@fleet/runtime";
import { z } from "zod";
import { hostnameOf } from "./http/loopback-guard.js";
import { GatewayWebEnv } from "./web-config.js";

/** A comma-separated list of host names (no scheme, no port), lower-cased; unset or empty: none. */
const envHostList = () =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      const names = (v ?? "")
        .split(",")
        .map((name) => name.trim().toLowerCase())
        .filter((name) => name !== "");
      const bad = names.filter((name) => hostnameOf(name) !== name.replace(/\.$/, ""));
      if (bad.length > 0) {
        ctx.addIssue({ code: "custom", message: `not host names (no scheme or port): ${bad.join(", ")}` });
        return z.NEVER;
      }
      return names.map((name) => name.replace(/\.$/, ""));
    });

/**
 * Every gateway setting, from the environment, with its default. NATS_URL, the login (NATS_*),
 * FLEET_TENANT, FLEET_STREAM_REPLICAS and LOG_LEVEL are the services' own (`natsServiceEnvFields`).
 */
export const GatewayEnv = z.object({
  ...natsServiceEnvFields,
  FLEET_GATEWAY_HOST: envString("127.0.0.1"),
  FLEET_GATEWAY_PORT: envInt(8787, 0, 65_535),
  /** JSON file mapping bearer tokens to a tenant and a role; unset: loopback clients only. */
  FLEET_GATEWAY_TOKENS: envString(""),
  /**
   * Without tokens: comma-separated host names, besides loopback ones, that a request may name in
   * `Host` (e.g. a name the machine is reached by); every other `Host` is refused (DNS rebinding).
   */
  FLEET_GATEWAY_HOSTS: envHostList(),
  /** How long `POST …/commands` waits for the outcome before answering 202. */
  FLEET_GATEWAY_COMMAND_TIMEOUT_MS: envInt(10_000, 1, 600_000),
  /** Interval of the SSE `:` keep-alive comment. */
  FLEET_GATEWAY_KEEPALIVE_MS: envInt(15_000, 10, 3_600_000),
  /** Bytes an SSE client may have unsent before it is dropped (it can resume with Last-Event-ID). */
  FLEET_GATEWAY_SSE_BUFFER_BYTES: envInt(1024 * 1024, 1024, 1024 * 1024 * 1024),
  /** Largest request body (an import is pi v3 JSONL and may be large); larger ones get 413. */
  FLEET_GATEWAY_BODY_LIMIT_BYTES: envInt(32 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
  /** First webhook retry delay; doubles per attempt up to the maximum. */
  FLEET_GATEWAY_WEBHOOK_BACKOFF_MS: envInt(1_000, 1, 3_600_000),
  FLEET_GATEWAY_WEBHOOK_BACKOFF_MAX_MS: envInt(300_000, 1, 86_400_000),
  /** Timeout of one webhook POST. */
  FLEET_GATEWAY_WEBHOOK_TIMEOUT_MS: envInt(10_000, 1, 600_000),
  ...GatewayWebEnv,
});
export type GatewayEnv = z.infer<typeof GatewayEnv>;
