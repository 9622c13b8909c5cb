// nats-server -js and redis-server started by `fleet up` on free loopback ports, data under .fleet/.
import type { ChildProcess } from "node:child_process";
import { createWriteStream, mkdirSync } from "node:fs";
import { join } from "node:path";
import { CliError } from "../cli-error.js";
import { describeExit, exitOf, spawnBound, stopChild } from "./child-process.js";
import { findBinary, installHint, isExecutable } from "./find-binary.js";
import { getFreePort } from "./free-port.js";

export interface LocalServer {
  name: "nats-server" | "redis-server";
  url: string;
  /** HTTP monitor (`/varz`, `/jsz`) for nats-server. */
  monitorUrl: string | null;
  dataDir: string;
  child: ChildProcess;
  stop(graceMs?: number): Promise<void>;
}

const ATTEMPTS = 3;
const START_TIMEOUT_MS = 15_000;

/**
 * `secure`: the server's config (operator mode, `fleet up --secure`) and its own data folder
 * `nats-secure` (its streams live in the tenants' accounts, not the anonymous one).
 */
export async function startLocalNats(
  home: string,
  env: NodeJS.ProcessEnv,
  secure?: { configFile: string },
): Promise<LocalServer> {
  const binary = serverBinary("nats-server", env.FLEET_NATS_SERVER, env);
  const dataDir = join(home, secure ? "nats-secure" : "nats");
  mkdirSync(dataDir, { recursive: true });
  return startWithRetry("nats-server", binary, join(home, "logs", "nats-server.log"), /Server is ready/, async () => {
    const [port, monitor] = [await getFreePort(), await getFreePort()];
    return {
      args: [
        ...(secure ? ["-c", secure.configFile] : []),
        ...["-js", "-a", "127.0.0.1", "-p", String(port), "-m", String(monitor), "-sd", dataDir, "-n", "fleet-local"],
      ],
      url: `nats://127.0.0.1:${port}`,
      monitorUrl: `http://127.0.0.1:${monitor}`,
      dataDir,
    };
  });
}

export async function startLocalRedis(home: string, env: NodeJS.ProcessEnv): Promise<LocalServer> {
  const binary = serverBinary("redis-server", env.FLEET_REDIS_SERVER, env);
  const dataDir = join(home, "redis");
  mkdirSync(dataDir, { recursive: true });
  return startWithRetry(
    "redis-server",
    binary,
    join(home, "logs", "redis-server.log"),
    /Ready to accept connections/,
    async () => {
      const port = await getFreePort();
      return {
        args: [
          ...["--port", String(port), "--bind", "127.0.0.1", "--dir", dataDir],
          ...["--appendonly", "yes", "--save", "", "--daemonize", "no", "--logfile", ""],
        ],
        url: `redis://127.0.0.1:${port}`,
        monitorUrl: null,
        dataDir,
      };
    },
  );
}

/** The binary to run: `override` (FLEET_NATS_SERVER / FLEET_REDIS_SERVER) when set, else found on PATH. */
function serverBinary(
  name: "nats-server" | "redis-server",
  override: string | undefined,
  env: NodeJS.ProcessEnv,
): string {
  const envVar = name === "nats-server" ? "NATS_URL" : "REDIS_URL";
  if (override) {
    if (isExecutable(override)) return override;
    throw new CliError(`${override} is not executable. ${installHint(name, envVar)}`);
  }
  const found = findBinary(name, env);
  if (!found) throw new CliError(installHint(name, envVar));
  return found;
}

async function startWithRetry(
  name: LocalServer["name"],
  binary: string,
  logFile: string,
  ready: RegExp,
  plan: () => Promise<{ args: string[]; url: string; monitorUrl: string | null; dataDir: string }>,
): Promise<LocalServer> {
  let lastError = "";
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    const p = await plan();
    const started = await spawnUntilReady(binary, p.args, logFile, ready);
    if (started.ok) {
      const child = started.child;
      return {
        name,
        url: p.url,
        monitorUrl: p.monitorUrl,
        dataDir: p.dataDir,
        child,
        stop: async (graceMs = 5_000) => {
          await stopChild(child, graceMs);
        },
      };
    }
    lastError = started.error;
    if (!/address already in use/i.test(lastError)) break;
  }
  throw new CliError(`${name} failed to start: ${lastError} (see ${logFile})`);
}

function spawnUntilReady(
  binary: string,
  args: string[],
  logFile: string,
  ready: RegExp,
): Promise<{ ok: true; child: ChildProcess } | { ok: false; error: string }> {
  mkdirSync(join(logFile, ".."), { recursive: true });
  const log = createWriteStream(logFile, { flags: "a" });
  const child = spawnBound(binary, args, { stdio: ["ignore", "pipe", "pipe"] });
  let seen = "";
  return new Promise((resolve) => {
    let settled = false;
    const settle = (result: { ok: true; child: ChildProcess } | { ok: false; error: string }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      log.write(chunk);
      if (settled) return;
      seen = (seen + chunk.toString("utf8")).slice(-8_192);
      if (ready.test(seen)) settle({ ok: true, child });
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("error", (err) => settle({ ok: false, error: err.message }));
    void exitOf(child).then((exit) => {
      log.end();
      const tail = seen.trim().split("\n").slice(-2).join(" | ");
      settle({ ok: false, error: `exited with ${describeExit(exit)}${tail ? `: ${tail}` : ""}` });
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      settle({ ok: false, error: `not ready after ${START_TIMEOUT_MS} ms` });
    }, START_TIMEOUT_MS);
  });
}
