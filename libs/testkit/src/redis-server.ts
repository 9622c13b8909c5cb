// A throwaway redis-server on a free loopback port, no persistence, its own temp dir.

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { removeTempDir, trackTempDir } from "./cleanup-registry.js";
import { resolveBackend, type ServerBackend } from "./container-runtime.js";
import { startContainerServer } from "./container-server.js";
import { getFreePort } from "./free-port.js";
import { type ManagedProcess, spawnManaged } from "./managed-process.js";
import { sendRedisCommand } from "./redis-command.js";

const HOST = "127.0.0.1";
const READY = /Ready to accept connections/;
const ADDRESS_IN_USE = /Address already in use/i;
const PORT_ATTEMPTS = 3;

/** Options of `startRedis`. */
export interface RedisServerOptions {
  /** Extra redis-server arguments (`--name value` pairs), appended last. */
  readonly args?: readonly string[];
  /** Default a free port. Never use 6379 (the system server). */
  readonly port?: number;
  /** Readiness timeout per start, default 10 000 ms. */
  readonly startTimeoutMs?: number;
  /** Default `auto`: see `ServerBackend`. */
  readonly backend?: ServerBackend;
  /** Container image for the container backend, default `redis:7.0.15` (the apt version). */
  readonly image?: string;
}

/**
 * A running redis-server owned by the caller (no RDB/AOF persistence: a restart starts empty).
 * Contract: `stop()` is idempotent and removes `dataDir`; `restart()` keeps `url`/`port` and changes `pid`.
 * Call `stop()` in `afterAll`; the process is also killed on process exit/SIGINT/SIGTERM.
 */
export interface RedisServer {
  /** `redis://127.0.0.1:<port>`. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** PID of the current redis-server process; undefined for the container backend. */
  readonly pid: number | undefined;
  /** The `--dir` working directory. */
  readonly dataDir: string;
  readonly backend: "process" | "container";
  output(): string;
  stop(): Promise<void>;
  restart(): Promise<void>;
}

/**
 * Starts redis-server and resolves once it logged "Ready to accept connections" and answered PING.
 * Throws when the binary is missing and no container runtime exists (the message names `redis-server`).
 */
export async function startRedis(opts: RedisServerOptions = {}): Promise<RedisServer> {
  if (opts.port === 6379) throw new Error("startRedis: port 6379 belongs to the system redis-server; omit `port`");
  const backend = await resolveBackend(opts.backend, "redis-server", "redis-server");
  const dataDir = mkdtempSync(join(tmpdir(), "fleet-redis-"));
  trackTempDir(dataDir);
  try {
    return backend.kind === "process"
      ? await startRedisProcess(backend.binary, dataDir, opts)
      : await startRedisContainer(dataDir, opts);
  } catch (error) {
    removeTempDir(dataDir);
    throw error;
  }
}

async function startRedisProcess(binary: string, dataDir: string, opts: RedisServerOptions): Promise<RedisServer> {
  const startTimeoutMs = opts.startTimeoutMs ?? 10_000;
  const spawnOn = async (port: number): Promise<ManagedProcess> => {
    const args = [
      ...["--port", String(port), "--bind", HOST, "--save", "", "--appendonly", "no", "--dir", dataDir],
      ...["--daemonize", "no", "--logfile", ""],
      ...(opts.args ?? []),
    ];
    const proc = await spawnManaged({
      label: `redis-server :${port}`,
      binary,
      args,
      readyPattern: READY,
      startTimeoutMs,
    });
    try {
      await expectPong(port, HOST);
    } catch (error) {
      await proc.kill();
      throw error;
    }
    return proc;
  };

  let port = opts.port ?? (await getFreePort());
  let proc: ManagedProcess | undefined;
  for (let attempt = 1; proc === undefined; attempt++) {
    try {
      proc = await spawnOn(port);
    } catch (error) {
      const retryable = opts.port === undefined && attempt < PORT_ATTEMPTS && ADDRESS_IN_USE.test(String(error));
      if (!retryable) throw error;
      port = await getFreePort();
    }
  }

  let current: ManagedProcess = proc;
  let stopped = false;
  return {
    url: `redis://${HOST}:${port}`,
    host: HOST,
    port,
    get pid() {
      return current.pid;
    },
    dataDir,
    backend: "process",
    output: () => current.output(),
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await current.stop();
      removeTempDir(dataDir);
    },
    restart: async () => {
      if (stopped) throw new Error("startRedis: restart() after stop()");
      await current.stop();
      current = await spawnOn(port);
    },
  };
}

async function startRedisContainer(dataDir: string, opts: RedisServerOptions): Promise<RedisServer> {
  const port = opts.port ?? (await getFreePort());
  const container = await startContainerServer({
    label: `redis-server :${port}`,
    image: opts.image ?? "redis:7.0.15",
    command: ["redis-server", "--save", "", "--appendonly", "no", ...(opts.args ?? [])],
    containerPort: 6379,
    hostPort: port,
    readyPattern: READY,
    startTimeoutMs: opts.startTimeoutMs ?? 60_000,
  });
  await expectPong(port, container.host);
  let stopped = false;
  return {
    url: `redis://${container.host}:${port}`,
    host: container.host,
    port,
    pid: undefined,
    dataDir,
    backend: "container",
    output: () => "",
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await container.stop();
      removeTempDir(dataDir);
    },
    restart: async () => {
      await container.restart();
      await expectPong(port, container.host);
    },
  };
}

async function expectPong(port: number, host: string): Promise<void> {
  const reply = await sendRedisCommand(port, ["PING"], { host });
  if (reply !== "PONG") throw new Error(`redis-server :${port}: PING answered ${JSON.stringify(reply)}`);
}
