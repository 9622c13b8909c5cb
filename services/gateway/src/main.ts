// The gateway service: configuration from the environment, then `startGateway` until SIGINT/SIGTERM.
import { createLogger, loadEnvOrExit, natsAuthFromEnv } from "@fleet/runtime";
import { GatewayEnv } from "./config.js";
import { GatewayConfigError, startGateway } from "./gateway.js";
import { loadTokensFile } from "./http/tokens-file.js";
import { webOptionsOf } from "./web-config.js";

const env = loadEnvOrExit("fleet-gateway", GatewayEnv);
const root = createLogger("fleet-gateway", { level: env.LOG_LEVEL });
const logger = env.FLEET_TENANT ? root.child({ tenant: env.FLEET_TENANT }) : root;
let tokens: ReturnType<typeof loadTokensFile> | undefined;
if (env.FLEET_GATEWAY_TOKENS) {
  tokens = loadTokensFile(env.FLEET_GATEWAY_TOKENS);
  if (!tokens.ok) {
    process.stderr.write(`fleet-gateway: FLEET_GATEWAY_TOKENS: ${tokens.error}\n`);
    process.exit(2);
  }
}

const gateway = await startGateway({
  natsUrl: env.NATS_URL,
  natsAuth: natsAuthFromEnv(process.env),
  ...(env.FLEET_TENANT ? { tenant: env.FLEET_TENANT } : {}),
  replicas: env.FLEET_STREAM_REPLICAS,
  host: env.FLEET_GATEWAY_HOST,
  port: env.FLEET_GATEWAY_PORT,
  tokens: tokens?.ok ? tokens.table : undefined,
  allowedHosts: env.FLEET_GATEWAY_HOSTS,
  commandTimeoutMs: env.FLEET_GATEWAY_COMMAND_TIMEOUT_MS,
  keepaliveMs: env.FLEET_GATEWAY_KEEPALIVE_MS,
  sseBufferBytes: env.FLEET_GATEWAY_SSE_BUFFER_BYTES,
  bodyLimitBytes: env.FLEET_GATEWAY_BODY_LIMIT_BYTES,
  webhookBackoffMs: env.FLEET_GATEWAY_WEBHOOK_BACKOFF_MS,
  webhookBackoffMaxMs: env.FLEET_GATEWAY_WEBHOOK_BACKOFF_MAX_MS,
  webhookTimeoutMs: env.FLEET_GATEWAY_WEBHOOK_TIMEOUT_MS,
  web: webOptionsOf(env),
  logger,
}).catch((err: unknown) => {
  if (err instanceof GatewayConfigError) {
    process.stderr.write(`fleet-gateway: ${err.message}\n`);
    process.exit(2);
  }
  logger.fatal({ evt: "gateway_start_failed", err }, "gateway failed to start");
  logger.flush();
  process.exit(1);
});

let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    void gateway.close().then(
      () => {
        logger.flush();
        process.exit(0);
      },
      (err: unknown) => {
        logger.error({ evt: "gateway_stop_failed", err }, "shutdown failed");
        process.exit(1);
      },
    );
  });
}
