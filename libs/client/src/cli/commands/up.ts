// `fleet up`: the whole stack in the foreground until SIGINT/SIGTERM; never prompts.
import { existsSync, mkdirSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { DEFAULT_PARTITIONS, type FleetRole, parseModelName, userOf } from "@fleet/protocol";
import { applyTopology, connectFleet, connectNats, NATS_AUTH_ENV, TopologyChangeError } from "@fleet/runtime";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { CliError } from "../cli-error.js";
import { inspectDeployment, isReady } from "../inspect-deployment.js";
import { type CliIo, errStyle, outStyle } from "../io.js";
import { probeRedis } from "../redis-probe.js";
import { findStack, fleetHome, removeStack, type StackFile, writeStack } from "../stack-file.js";
import { getFreePort, preferredPort } from "../up/free-port.js";
import { type LocalServer, startLocalNats, startLocalRedis } from "../up/local-servers.js";
import { type ReadinessWatch, watchReadiness } from "../up/readiness-watch.js";
import { prepareSecureSetup, type SecureSetup, secureDirOf } from "../up/secure-setup.js";
import { DEMO_SCRIPT, type ServiceName, serviceProgram } from "../up/service-specs.js";
import { describeExit, type ServiceSpec, Supervisor } from "../up/supervisor.js";

/** The gateway's port when FLEET_GATEWAY_PORT is unset and it is free (else any free port). */
const GATEWAY_PORT = 8787;
const CHILD_GRACE_MS = 10_000;
/** SIGHUP too: a closed terminal stops the stack cleanly instead of killing `fleet up` outright. */
const STOP_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
/** A tenant not ready this long after the banner is reported slow (and still reported ready later). */
const READY_WARN_MS = 30_000;

/** One worker process: which service, its name in logs and the banner, and its own environment. */
interface Unit {
  name: string;
  service: ServiceName;
  tenant?: string;
  env: NodeJS.ProcessEnv;
}

/** `fleet up`'s own NATS connections per tenant: one sets the topology up, one reads its health. */
interface TenantConnections {
  tenant: string | undefined;
  setup: NatsConnection;
  inspect: NatsConnection;
}

export interface UpOptions {
  /**
   * Operator mode: generated accounts, users (creds files) and tokens for the tenants acme and
   * globex; every service logs in as its own user; one gateway serves both.
   */
  secure?: boolean;
  /** An MCP configuration file (relative to the working directory) passed to every tool runner as FLEET_MCP_CONFIG. */
  mcpConfig?: string;
}

/** Runs until a signal; resolves with the exit code after everything it started has stopped. */
export async function upCommand(io: CliIo, opts: UpOptions = {}): Promise<number> {
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
  const mcpConfig = opts.mcpConfig ?? io.env.FLEET_MCP_CONFIG;
  const mcpConfigPath = mcpConfig ? resolve(io.cwd, mcpConfig) : undefined;
  if (mcpConfigPath && !existsSync(mcpConfigPath)) throw new CliError(`--mcp-config: ${mcpConfigPath} does not exist`);
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

  const conns: TenantConnections[] = [];
  let stopWatches: () => void = () => {};
  try {
    const partitions = io.env.FLEET_PARTITIONS ? Number(io.env.FLEET_PARTITIONS) : undefined;
    if (partitions !== undefined && (!Number.isInteger(partitions) || partitions < 1)) {
      throw new CliError(
        `FLEET_PARTITIONS must be a positive integer (got ${JSON.stringify(io.env.FLEET_PARTITIONS)})`,
      );
    }
    const groups = io.env.FLEET_STREAM_GROUPS ? Number(io.env.FLEET_STREAM_GROUPS) : undefined;
    if (groups !== undefined && (!Number.isInteger(groups) || groups < 1)) {
      throw new CliError(
        `FLEET_STREAM_GROUPS must be a positive integer (got ${JSON.stringify(io.env.FLEET_STREAM_GROUPS)})`,
      );
    }
    let secure: SecureSetup | undefined;
    if (opts.secure) {
      if (io.env.NATS_URL) throw new CliError("fleet up --secure starts its own nats-server: unset NATS_URL");
      secure = await prepareSecureSetup(secureDirOf(io.env, io.cwd, home), partitions ?? DEFAULT_PARTITIONS, groups);
    }
    const natsConfig = secure && { configFile: secure.natsConf };
    // 1. NATS and Redis: the given ones, or our own on free ports with data under .fleet/.
    const natsUrl = io.env.NATS_URL || (await startServer(servers, () => startLocalNats(home, io.env, natsConfig))).url;
    if (signals) return 130;
    const redisUrl = io.env.REDIS_URL || (await startServer(servers, () => startLocalRedis(home, io.env))).url;
    if (signals) return 130;
    if (secure) {
      const setup = secure;
      for (const tenant of setup.tenants) {
        const as = (role: FleetRole) =>
          connectFleet({ role, url: natsUrl, name: `fleet-up-${tenant}`, auth: { creds: setup.credsOf(tenant, role) } })
            .then((c) => c.nc)
            .catch((e: Error) => {
              throw new CliError(e.message);
            });
        // The loop's user may create the topology; the operator's reads what `fleet doctor` reads.
        conns.push({ tenant, setup: await as("loop"), inspect: await as("operator") });
      }
    } else {
      let nc: NatsConnection;
      try {
        nc = await connectNats({ url: natsUrl, name: "fleet-up", timeoutMs: 5_000 });
      } catch (e) {
        throw new CliError(`cannot reach NATS at ${natsUrl} (${(e as Error).message})`);
      }
      conns.push({ tenant: undefined, setup: nc, inspect: nc });
    }
    if (io.env.REDIS_URL) {
      const probe = await probeRedis(redisUrl);
      if (!probe.ok) throw new CliError(`cannot reach Redis at ${redisUrl} (${probe.error})`);
    }
    let topologyPartitions = 0;
    let topologyGroups = 1;
    for (const conn of conns) {
      // With --secure, K is the one the users' permissions were generated for.
      const topology = await applyTopology(conn.setup, { partitions, groups: secure?.groups ?? groups }).catch(
        (err: unknown) => {
          throw err instanceof TopologyChangeError ? new CliError(err.message) : err;
        },
      );
      for (const line of topology.drift) warn(`! drift${conn.tenant ? ` (${conn.tenant})` : ""}: ${line}`);
      topologyPartitions = topology.partitions;
      topologyGroups = topology.groups;
    }

    // 2. The model: Claude with a key, else the offline scripted demo.
    const provider = chooseProvider(io.env);
    if (provider.notice) warn(provider.notice);
    const workspace = resolve(io.cwd, io.env.FLEET_WORKSPACE || ".");
    mkdirSync(workspace, { recursive: true });

    // 3. Workers: one of each; with --secure one loop, runner and store per tenant, each under its
    // own user, and one gateway for every tenant.
    const units: Unit[] = [];
    for (const tenant of secure?.tenants ?? [undefined]) {
      for (const service of ["store", "tools", "loop"] as const) {
        units.push({
          name: tenant ? `${service}-${tenant}` : service,
          service,
          ...(tenant ? { tenant } : {}),
          env: secure && tenant ? { [NATS_AUTH_ENV.creds]: secure.credsOf(tenant, service), FLEET_TENANT: tenant } : {},
        });
      }
    }
    units.push({ name: "gateway", service: "gateway", env: secure ? { FLEET_GATEWAY_TOKENS: secure.tokensFile } : {} });
    const banner: string[] = [];
    const width = Math.max(7, ...units.map((u) => u.name.length));
    let gateway: string | undefined;
    for (const unit of units) {
      const { name } = unit;
      const program = serviceProgram(unit.service, io.env);
      if (!program) {
        const folder = unit.service === "store" ? "session-store" : unit.service;
        warn(`! ${name}: services/${folder}/src/main.ts does not exist; not started`);
        continue;
      }
      const opsPort = await getFreePort();
      const env: NodeJS.ProcessEnv = {
        ...(secure ? withoutNatsLogin(io.env) : io.env),
        NATS_URL: natsUrl,
        REDIS_URL: redisUrl,
        FLEET_OPS_PORT: String(opsPort),
        LOG_LEVEL: io.env.LOG_LEVEL ?? "info",
        FLEET_PARTITIONS: String(topologyPartitions),
        FLEET_STREAM_GROUPS: String(topologyGroups),
        ...unit.env,
      };
      if (unit.service === "loop") Object.assign(env, provider.env);
      if (unit.service === "loop" && io.env.FLEET_MODELS) env.FLEET_MODELS = resolve(io.cwd, io.env.FLEET_MODELS);
      if (unit.service === "tools") {
        env.FLEET_WORKSPACE = workspace;
        env.FLEET_WORKSPACE_MODE = io.env.FLEET_WORKSPACE_MODE ?? "shared";
        if (mcpConfigPath) env.FLEET_MCP_CONFIG = mcpConfigPath;
      }
      let gatewayUrl: string | undefined;
      if (unit.service === "gateway") {
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
          `  gateway  ${gatewayUrl}  (${env.FLEET_GATEWAY_TOKENS ? "bearer tokens" : "loopback clients only"}; /openapi.json)`,
          `  console  ${gatewayUrl}/  (the web console: sessions, replay, tree, approvals, health)`,
          ...(secure ? [`  tokens   ${secure.tokensFile}`] : []),
        );
        continue;
      }
      const detail =
        unit.service === "loop"
          ? `model: ${provider.describe}`
          : unit.service === "tools"
            ? `workspace: ${unit.tenant ? join(workspace, unit.tenant) : workspace} (${env.FLEET_WORKSPACE_MODE})`
            : `redis: ${redisUrl}`;
      const user = unit.tenant ? `  NATS user ${userOf(unit.tenant, unit.service as FleetRole)}` : "";
      banner.push(`  ${name.padEnd(width)} ops ${spec.opsUrl}  ${detail}${user}`);
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
      secure: secure ? { dir: secure.dir, tokensFile: secure.tokensFile } : null,
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
      `  NATS    ${natsUrl}${nats ? `  (monitor ${nats.monitorUrl}, data ${rel(nats.dataDir)})` : "  (NATS_URL)"}  partitions: ${topologyPartitions}${topologyGroups > 1 ? `, stream groups: ${topologyGroups}` : ""}`,
    );
    if (secure) {
      const how = secure.created ? "generated now" : "kept from an earlier run";
      say(`  secure  ${rel(secure.dir)}/  (${how}: operator mode, accounts ${secure.tenants.join(", ")}, creds/)`);
      const creds = rel(secure.credsOf(secure.tenants[0] ?? "", "operator"));
      say(`          the CLI as a tenant: NATS_CREDS=${creds} fleet <command>`);
    }
    const redis = own("redis-server");
    say(`  Redis   ${redisUrl}${redis ? `  (data ${rel(redis.dataDir)})` : "  (REDIS_URL)"}`);
    for (const line of banner) say(line);
    say(`  logs    ${rel(join(home, "logs"))}/   stack: ${rel(stackPath)}`);
    say(out.dim("Ctrl-C stops everything."));

    // 4. Readiness report (once per tenant), while waiting for a signal.
    const watches: ReadinessWatch[] = [];
    stopWatches = () => {
      for (const w of watches) w.stop();
    };
    for (const conn of conns) {
      const jsm = await jetstreamManager(conn.inspect);
      const label = conn.tenant ? `ready (${conn.tenant})` : "ready";
      watches.push(
        watchReadiness({
          inspect: () => inspectDeployment(conn.inspect, jsm),
          isReady,
          onReady: (report) => {
            const [loop, store] = report.leases;
            say(
              out.green(
                `${label}: ${loop?.held}/${report.partitions} loop leases, ${store?.held}/${store?.total} store leases, ${report.tools.length} tools (${report.tools.map((t) => t.name).join(", ")})`,
              ),
            );
          },
          onSlow: () =>
            warn(
              `! ${conn.tenant ?? "the stack"} not ready after 30 s (still waiting); run \`fleet doctor\` for details`,
            ),
          warnAfterMs: READY_WARN_MS,
          intervalMs: 500,
          slowIntervalMs: 2_000,
          now: Date.now,
        }),
      );
    }

    await stopped;
    say(out.dim("stopping…"));
    return 0;
  } finally {
    stopWatches();
    await supervisor.stopAll(CHILD_GRACE_MS);
    for (const conn of conns) {
      await conn.setup.close().catch(() => undefined);
      if (conn.inspect !== conn.setup) await conn.inspect.close().catch(() => undefined);
    }
    for (const server of [...servers].reverse()) await server.stop();
    if (existsSync(stackPath) && stack) removeStack(stackPath);
    for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
  }
}

/** The environment without any NATS login, so each child gets exactly its own. */
function withoutNatsLogin(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const names = new Set<string>(Object.values(NATS_AUTH_ENV));
  return Object.fromEntries(Object.entries(env).filter(([name]) => !names.has(name)));
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
  /** `anthropic`, `scripted`, or a provider pi-ai serves (its registry's, or FLEET_MODELS'). */
  name: string;
  env: NodeJS.ProcessEnv;
  describe: string;
  notice?: string;
}

/**
 * The provider of a `provider/modelId` FLEET_DEFAULT_MODEL wins, then FLEET_PROVIDER; else Claude when
 * ANTHROPIC_API_KEY is set; else the scripted demo. Any other provider is pi-ai's (the loop checks the model).
 */
export function chooseProvider(env: NodeJS.ProcessEnv): ProviderChoice {
  const named = env.FLEET_DEFAULT_MODEL?.includes("/") ? parseModelName(env.FLEET_DEFAULT_MODEL) : undefined;
  const explicit = named?.provider ?? env.FLEET_PROVIDER;
  if (explicit === "anthropic" || (explicit === undefined && env.ANTHROPIC_API_KEY)) {
    if (!env.ANTHROPIC_API_KEY) throw new CliError("FLEET_PROVIDER=anthropic needs ANTHROPIC_API_KEY");
    return {
      name: "anthropic",
      env: { FLEET_PROVIDER: "anthropic" },
      describe: `Claude (${env.FLEET_DEFAULT_MODEL ?? "the loop's default model"}${env.ANTHROPIC_BASE_URL ? ` via ${env.ANTHROPIC_BASE_URL}` : ""})`,
    };
  }
  if (explicit !== undefined && explicit !== "scripted") {
    const model = named?.modelId ?? env.FLEET_DEFAULT_MODEL ?? "the loop's default model";
    return {
      name: explicit,
      env: { FLEET_PROVIDER: explicit },
      describe: `${explicit}/${model} (pi-ai${env.FLEET_MODELS ? `, models from ${env.FLEET_MODELS}` : ""})`,
    };
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
