// Finds server binaries on PATH and in the sbin dirs Debian installs them to (not on a user's PATH).
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";

const EXTRA_DIRS = ["/usr/sbin", "/usr/local/sbin", "/sbin", "/usr/local/bin", "/opt/homebrew/bin", "/usr/bin"];

export function findBinary(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const dirs = [...(env.PATH ?? "").split(delimiter).filter(Boolean), ...EXTRA_DIRS];
  return dirs.map((dir) => join(dir, name)).find(isExecutable);
}

export function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The one-line install hint for a missing server binary, per platform. */
export function installHint(binary: "nats-server" | "redis-server", envVar: "NATS_URL" | "REDIS_URL"): string {
  const apt = binary === "nats-server" ? "nats-server" : "redis-server";
  const brew = binary === "nats-server" ? "nats-server" : "redis";
  const how =
    process.platform === "darwin"
      ? `brew install ${brew}`
      : process.platform === "linux"
        ? `sudo apt-get install -y ${apt}`
        : `install ${binary} with your package manager`;
  return `${binary} not found: install it with \`${how}\` (or run \`bash scripts/ensure-servers.sh\`), or set ${envVar} to use a running server`;
}
