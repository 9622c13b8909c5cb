// The environment of a `fleet up --secure` test: its home, generated files and gateway port under `dir`.
import { join } from "node:path";
import { getFreePort } from "@fleet/testkit";

export async function secureUpEnv(dir: string, extra: Record<string, string>) {
  const home = join(dir, ".fleet");
  const secureDir = join(dir, "secure");
  const port = await getFreePort();
  const env = {
    FLEET_HOME: home,
    FLEET_SECURE_DIR: secureDir,
    FLEET_WORKSPACE: join(dir, "ws"),
    FLEET_GATEWAY_PORT: String(port),
    ...extra,
  };
  return { home, secureDir, port, env };
}
