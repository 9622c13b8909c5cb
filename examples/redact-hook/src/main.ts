// The redaction hook server as a process: `npm start -w @fleet/example-redact-hook`.
// NATS_URL (and NATS_CREDS etc., as the `hooks` role), FLEET_HOOK_SERVER_NAME (default `redact`).
import { HOOK_SERVER_PATTERN } from "@fleet/protocol";
import { connectFleet, createLogger, natsAuthFromEnv } from "@fleet/runtime";
import { serveRedaction } from "./serve.js";

const server = process.env.FLEET_HOOK_SERVER_NAME || "redact";
if (!HOOK_SERVER_PATTERN.test(server)) {
  console.error(`FLEET_HOOK_SERVER_NAME must match ${HOOK_SERVER_PATTERN}`);
  process.exit(2);
}
const log = createLogger("example-redact-hook", { level: process.env.LOG_LEVEL ?? "info" });
const { nc } = await connectFleet({
  url: process.env.NATS_URL ?? "nats://127.0.0.1:4222",
  name: `hook-${server}`,
  role: "hooks",
  auth: natsAuthFromEnv(process.env),
});
serveRedaction(nc, server, log);
await nc.flush();
log.info({ evt: "hook_server_started", server, subject: `fleet.hook.transform_context.${server}` }, "serving");
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    void nc.drain().then(() => process.exit(0));
  });
}
