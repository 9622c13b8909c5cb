// `fleet up`: the whole stack in the foreground until SIGINT/SIGTERM; never prompts.
import { existsSync, mkdirSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { applyTopology, connectNats } from "@fleet/runtime";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { CliError } from "../cli-error.js";
import { inspectDeployment, isReady } from "../inspect-deployment.js";
import { type CliIo, errStyle, outStyle } from "../io.js";
import { probeRedis } from "../redis-probe.js";
import { findStack, fleetHome, removeStack, type StackFile, writeStack } from "../stack-file.js";
import { getFreePort, preferredPort } from "../up/free-port.js";
import { type LocalServer, startLocalNats, startLocalRedis } from "../up/local-servers.js";
import { DEMO_SCRIPT, type ServiceName, serviceProgram } from "../up/service-specs.js";
import { describeExit, type ServiceSpec, Supervisor } from "../up/supervisor.js";

const SERVICES: ServiceName[] = ["store", "tools", "loop", "gateway"];
/** The gateway's port when FLEET_GATEWAY_PORT is unset and it is free (else any free port). */
const GATEWAY_PORT = 8787;
const CHILD_GRACE_MS = 10_000;
/** SIGHUP too: a closed terminal stops the stack cleanly instead of killing `fleet up` outright. */
const STOP_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

/** Runs until a signal; resolves with the exit code after everything it started has stopped. */
export async function upCommand(io: CliIo): Promise<number> {
  const out = outStyle(io);
  const err = errStyle(io);
  const say = (line: string) => io.stdout.write(`${line}\n`);
  const warn = (line: string) => io.stderr.write(`${err.yellow(line)}\n`);
  const home = fleetHome(io.env, io.cwd);
  const stackPath = join(home, "stack.json");
  const running = findStack(io.env, io.cwd);
  if (running && running.path === stackPath) {
    throw new CliError(`fleet up is already running here (pid ${running.stack.pid}, ${running.stack.natsUrl})`);
  }
  mkdirSync(join(home, "logs"), { recursive: true });

  const servers: LocalServer[] = [];
  const supervisor = new Supervisor({
    onStart: () => refreshStack(),
    onCrash: (name, exit, delayMs, restarts, tail) => {
      warn(`✗ ${name} exited (${describeExit(exit)}); restarting in ${delayMs / 1000}s (restart #${restarts})`);
      for (const line of tail) io.stderr.write(`    ${err.dim(line)}\n`);
    },
  });
  let stack: StackFile | undefined;
  const refreshStack = () => {
    if (!stack) return;
    stack = { ...stack, services: [...serverPids(servers), ...supervisor.pids()] };
    writeStack(stackPath, stack);
  };

  let signals = 0;
  let wake: () => void = () => undefined;
  const stopped = new Promise<void>((r) => {
    wake = r;
  });
  const onSignal = () => {
    signals++;
    if (signals === 1) wake();
    else {
      supervisor.killAll();
      for (const s of servers) s.child.kill("SIGKILL");
      removeStack(stackPath);
      process.exit(130);
    }
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);

  let nc: NatsConnection | undefined;
  let readinessTimer: NodeJS.Timeout | undefined;
  try {
    // 1. NATS and Redis: the given ones, or our own on free ports with data under .fleet/.
    const natsUrl = io.env.NATS_URL || (await startServer(servers, () => startLocalNats(home, io.env))).url;
    if (signals) return 130;
    const redisUrl = io.env.REDIS_URL || (await startServer(servers, () => startLocalRedis(home, io.env))).url;
    if (signals) return 130;
    try {
      nc = await connectNats({ url: natsUrl, name: "fleet-up", timeoutMs: 5_000 });
    } catch (e) {
      throw new CliError(`cannot reach NATS at ${natsUrl} (${(e as Error).message})`);
    }
    if (io.env.REDIS_URL) {
      const probe = await probeRedis(redisUrl);
      if (!probe.ok) throw new CliError(`cannot reach Redis at ${redisUrl} (${probe.error})`);
    }
    const partitions = io.env.FLEET_PARTITIONS ? Number(io.env.FLEET_PARTITIONS) : undefined;
    if (partitions !== undefined && (!Number.isInteger(partitions) || partitions < 1)) {
      throw new CliError(
        `FLEET_PARTITIONS must be a positive integer (got ${JSON.stringify(io.env.FLEET_PARTITIONS)})`,
      );
    }
    const topology = await applyTopology(nc, partitions !== undefined ? { partitions } : {});
    for (const line of topology.drift) warn(`! drift: ${line}`);

    // 2. The model: Claude with a key, else the offline scripted demo.
    const provider = chooseProvider(io.env);
    if (provider.notice) warn(provider.notice);
    const workspace = resolve(io.cwd, io.env.FLEET_WORKSPACE || ".");
    mkdirSync(workspace, { recursive: true });

    // 3. Workers.
    const banner: string[] = [];
    let gateway: string | undefined;
    for (const name of SERVICES) {
      const program = serviceProgram(name, io.env);
      if (!program) {
        warn(
          `! ${name}: services/${name === "store" ? "session-store" : name}/src/main.ts does not exist; not started`,
        );
        continue;
      }
      const opsPort = await getFreePort();
      const env: NodeJS.ProcessEnv = {
        ...io.env,
        NATS_URL: natsUrl,
        REDIS_URL: redisUrl,
        FLEET_OPS_PORT: String(opsPort),
        LOG_LEVEL: io.env.LOG_LEVEL ?? "info",
        FLEET_PARTITIONS: String(topology.partitions),
      };
      if (name === "loop") Object.assign(env, provider.env);
      if (name === "tools") {
        env.FLEET_WORKSPACE = workspace;
        env.FLEET_WORKSPACE_MODE = io.env.FLEET_WORKSPACE_MODE ?? "shared";
      }
      let gatewayUrl: string | undefined;
      if (name === "gateway") {
        const host = io.env.FLEET_GATEWAY_HOST || "127.0.0.1";
        const port = io.env.FLEET_GATEWAY_PORT || String(await preferredPort(host, GATEWAY_PORT));
        env.FLEET_GATEWAY_HOST = host;
        env.FLEET_GATEWAY_PORT = port;
        gatewayUrl = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
        gateway = gatewayUrl;
      }
      const spec: ServiceSpec = {
        name,
        command: program.command,
        args: program.args,
        env,
        cwd: io.cwd,
        logFile: join(home, "logs", `${name}.log`),
        opsUrl: gatewayUrl ?? `http://127.0.0.1:${opsPort}`,
      };
      supervisor.start(spec);
      if (gatewayUrl) {
        banner.push(
          `  gateway  ${gatewayUrl}  (${io.env.FLEET_GATEWAY_TOKENS ? "bearer tokens" : "loopback clients only"}; /openapi.json)`,
          `  console  ${gatewayUrl}/  (the web console: sessions, replay, tree, approvals, health)`,
        );
        continue;
      }
      const detail =
        name === "loop"
          ? `model: ${provider.describe}`
          : name === "tools"
            ? `workspace: ${workspace} (${env.FLEET_WORKSPACE_MODE})`
            : `redis: ${redisUrl}`;
      banner.push(`  ${name.padEnd(7)} ops ${spec.opsUrl}  ${detail}`);
    }

    stack = {
      natsUrl,
      redisUrl,
      natsMonitorUrl: servers.find((s) => s.name === "nats-server")?.monitorUrl ?? null,
      pid: process.pid,
      startedAt: Date.now(),
      workspace,
      dataDir: home,
      provider: provider.name,
      gatewayUrl: gateway ?? null,
      services: [],
    };
    refreshStack();

    const rel = (p: string) => {
      const r = relative(io.cwd, p);
      return r === "" ? "." : r.startsWith("..") ? p : r;
    };
    const own = (name: LocalServer["name"]) => servers.find((s) => s.name === name);
    say(out.bold("fleet up"));
    const nats = own("nats-server");
    say(
      `  NATS    ${natsUrl}${nats ? `  (monitor ${nats.monitorUrl}, data ${rel(nats.dataDir)})` : "  (NATS_URL)"}  partitions: ${topology.partitions}`,
    );
    const redis = own("redis-server");
    say(`  Redis   ${redisUrl}${redis ? `  (data ${rel(redis.dataDir)})` : "  (REDIS_URL)"}`);
    for (const line of banner) say(line);
    say(`  logs    ${rel(join(home, "logs"))}/   stack: ${rel(stackPath)}`);
    say(out.dim("Ctrl-C stops everything."));

    // 4. Readiness report (once), while waiting for a signal.
    const readyAt = Date.now();
    const connection = nc;
    const jsm = await jetstreamManager(connection);
    let reported = false;
    const poll = async () => {
      if (reported || signals) return;
      const report = await inspectDeployment(connection, jsm).catch(() => undefined);
      if (report && isReady(report)) {
        reported = true;
        const [loop, store] = report.leases;
        say(
          out.green(
            `ready: ${loop?.held}/${report.partitions} loop leases, ${store?.held}/${report.partitions} store leases, ${report.tools.length} tools (${report.tools.map((t) => t.name).join(", ")})`,
          ),
        );
        return;
      }
      if (Date.now() - readyAt > 30_000) {
        reported = true;
        warn("! not ready after 30 s; run `fleet doctor` for details");
        return;
      }
      readinessTimer = setTimeout(() => void poll(), 500);
    };
    void poll();

    await stopped;
    say(out.dim("stopping…"));
    return 0;
  } finally {
    if (readinessTimer) clearTimeout(readinessTimer);
    await supervisor.stopAll(CHILD_GRACE_MS);
    await nc?.close().catch(() => undefined);
    for (const server of [...servers].reverse()) await server.stop();
    if (existsSync(stackPath) && stack) removeStack(stackPath);
    for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
  }
}

async function startServer(servers: LocalServer[], start: () => Promise<LocalServer>): Promise<LocalServer> {
  const server = await start();
  servers.push(server);
  return server;
}

function serverPids(servers: LocalServer[]) {
  return servers.map((s) => ({ name: s.name, pid: s.child.pid ?? null, opsUrl: s.monitorUrl }));
}

interface ProviderChoice {
  name: "anthropic" | "scripted";
  env: NodeJS.ProcessEnv;
  describe: string;
  notice?: string;
}

/** FLEET_PROVIDER wins; else Claude when ANTHROPIC_API_KEY is set; else the scripted demo. */
export function chooseProvider(env: NodeJS.ProcessEnv): ProviderChoice {
  const explicit = env.FLEET_PROVIDER;
  if (explicit === "anthropic" || (explicit === undefined && env.ANTHROPIC_API_KEY)) {
    if (!env.ANTHROPIC_API_KEY) throw new CliError("FLEET_PROVIDER=anthropic needs ANTHROPIC_API_KEY");
    return {
      name: "anthropic",
      env: { FLEET_PROVIDER: "anthropic" },
      describe: `Claude (${env.FLEET_DEFAULT_MODEL ?? "the loop's default model"}${env.ANTHROPIC_BASE_URL ? ` via ${env.ANTHROPIC_BASE_URL}` : ""})`,
    };
  }
  if (explicit !== undefined && explicit !== "scripted") {
    throw new CliError(`FLEET_PROVIDER must be anthropic or scripted (got ${JSON.stringify(explicit)})`);
  }
  const script = env.FLEET_SCRIPT || DEMO_SCRIPT;
  return {
    name: "scripted",
    env: { FLEET_PROVIDER: "scripted", FLEET_SCRIPT: script },
    describe: `scripted demo (${script})`,
    ...(explicit === undefined
      ? {
          notice:
            "ANTHROPIC_API_KEY is not set: using the scripted demo model (offline; set the key to talk to Claude)",
        }
      : {}),
  };
}
