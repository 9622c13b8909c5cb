// A throwaway JetStream-enabled nats-server on a free loopback port with its own temp store dir.

import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { removeTempDir, trackTempDir } from "./cleanup-registry.js";
import { resolveBackend, type ServerBackend } from "./container-runtime.js";
import { startContainerServer } from "./container-server.js";
import { getFreePort } from "./free-port.js";
import { type ManagedProcess, spawnManaged } from "./managed-process.js";
import { buildNatsConfig, type JetStreamLimits } from "./nats-config.js";

const HOST = "127.0.0.1";
const READY = /Server is ready/;
const ADDRESS_IN_USE = /address already in use/;
const PORT_ATTEMPTS = 3;

/** Options of `startNats`. */
export interface NatsServerOptions {
  /**
   * Config text appended to the generated config, e.g. the `accounts { … }` block of `renderAccountsConf`:
   * users and permissions (the server then refuses anonymous clients).
   */
  readonly config?: string;
  /** Environment of the server process on top of this one's (e.g. the password variables `config` references). */
  readonly env?: Readonly<Record<string, string>>;
  /** Extra nats-server CLI arguments, appended last (they override the generated config). */
  readonly args?: readonly string[];
  /** `max_payload` in bytes (server default 1 MiB). */
  readonly maxPayload?: number;
  /** JetStream store limits in bytes. */
  readonly jetstream?: JetStreamLimits;
  /** Client port; default a free one. Never use 4222 (the system server). */
  readonly port?: number;
  /** Also open the HTTP monitor (`/varz`, `/jsz`) on a free port, exposed as `monitorUrl`. */
  readonly monitor?: boolean;
  /** Readiness timeout per start, default 10 000 ms. */
  readonly startTimeoutMs?: number;
  /** Default `auto`: see `ServerBackend`. */
  readonly backend?: ServerBackend;
  /** Container image for the container backend, default `nats:2.9.10` (the apt version). */
  readonly image?: string;
}

/**
 * A running nats-server owned by the caller.
 * Contract: `stop()` is idempotent and removes `dataDir`; `restart()` keeps `url`, `port` and the store
 * (JetStream data survives) and changes `pid`. Call `stop()` in `afterAll`; the process is also killed on
 * process exit/SIGINT/SIGTERM.
 */
export interface NatsServer {
  /** `nats://127.0.0.1:<port>`. */
  readonly url: string;
  readonly port: number;
  /** PID of the current nats-server process; undefined for the container backend. */
  readonly pid: number | undefined;
  /** The JetStream store dir (`-sd`); nats-server writes into `<dataDir>/jetstream`. */
  readonly dataDir: string;
  /** `http://127.0.0.1:<port>` when `monitor: true`. */
  readonly monitorUrl: string | undefined;
  readonly backend: "process" | "container";
  /** The server's combined log output of the current process (empty for containers). */
  output(): string;
  stop(): Promise<void>;
  restart(): Promise<void>;
}

/**
 * Starts nats-server with JetStream and resolves once it logged "Server is ready".
 * Throws when the binary is missing and no container runtime exists (the message names `nats-server`).
 */
export async function startNats(opts: NatsServerOptions = {}): Promise<NatsServer> {
  if (opts.port === 4222) throw new Error("startNats: port 4222 belongs to the system nats-server; omit `port`");
  const backend = await resolveBackend(opts.backend, "nats-server", "nats-server");
  const rootDir = mkdtempSync(join(tmpdir(), "fleet-nats-"));
  trackTempDir(rootDir);
  try {
    return backend.kind === "process"
      ? await startNatsProcess(backend.binary, rootDir, opts)
      : await startNatsContainer(rootDir, opts);
  } catch (error) {
    removeTempDir(rootDir);
    throw error;
  }
}

async function startNatsProcess(binary: string, rootDir: string, opts: NatsServerOptions): Promise<NatsServer> {
  const dataDir = join(rootDir, "store");
  const configFile = join(rootDir, "nats.conf");
  mkdirSync(dataDir);
  const startTimeoutMs = opts.startTimeoutMs ?? 10_000;
  const monitorPort = opts.monitor === true ? await getFreePort() : undefined;

  const spawnOn = (port: number): Promise<ManagedProcess> => {
    writeFileSync(
      configFile,
      buildNatsConfig({ ...natsConfigInput(opts), host: HOST, port, storeDir: dataDir, monitorPort }),
    );
    // The config carries listen, JetStream store_dir and limits (`-sd` next to a store_dir is a duplicate error).
    const args = ["-c", configFile, ...(opts.args ?? [])];
    return spawnManaged({
      label: `nats-server :${port}`,
      binary,
      args,
      readyPattern: READY,
      startTimeoutMs,
      ...(opts.env ? { env: opts.env } : {}),
    });
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
    url: `nats://${HOST}:${port}`,
    port,
    get pid() {
      return current.pid;
    },
    dataDir,
    monitorUrl: monitorPort === undefined ? undefined : `http://${HOST}:${monitorPort}`,
    backend: "process",
    output: () => current.output(),
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await current.stop();
      removeTempDir(rootDir);
    },
    restart: async () => {
      if (stopped) throw new Error("startNats: restart() after stop()");
      await current.stop();
      current = await spawnOn(port);
    },
  };
}

async function startNatsContainer(rootDir: string, opts: NatsServerOptions): Promise<NatsServer> {
  const port = opts.port ?? (await getFreePort());
  const mount = "/fleet";
  writeFileSync(
    join(rootDir, "nats.conf"),
    buildNatsConfig({ ...natsConfigInput(opts), host: "0.0.0.0", port: 4222, storeDir: `${mount}/store` }),
  );
  const container = await startContainerServer({
    label: `nats-server :${port}`,
    image: opts.image ?? "nats:2.9.10",
    command: ["-c", `${mount}/nats.conf`, ...(opts.args ?? [])],
    containerPort: 4222,
    hostPort: port,
    readyPattern: READY,
    startTimeoutMs: opts.startTimeoutMs ?? 60_000,
    bindMount: { source: rootDir, target: mount },
  });
  let stopped = false;
  return {
    url: `nats://${container.host}:${port}`,
    port,
    pid: undefined,
    dataDir: join(rootDir, "store"),
    monitorUrl: undefined,
    backend: "container",
    output: () => "",
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await container.stop();
      removeTempDir(rootDir);
    },
    restart: () => container.restart(),
  };
}

function natsConfigInput(opts: NatsServerOptions) {
  return {
    ...(opts.maxPayload === undefined ? {} : { maxPayload: opts.maxPayload }),
    ...(opts.jetstream === undefined ? {} : { jetstream: opts.jetstream }),
    ...(opts.config === undefined ? {} : { extra: opts.config }),
  };
}
