// The system under test, all real and separate: nats-server (or a 3-node cluster) with file storage
// limited to CHAOS_MAX_FILE_STORE, redis-server, the fake Anthropic server in stateless mode, 2 loop
// workers, 2 tool runners, 2 stores and 2 HTTP gateways (each on a port of its own that it keeps
// across restarts), which also deliver the run's webhook.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type FakeAnthropic,
  getFreePort,
  type NatsCluster,
  type NatsServer,
  type RedisServer,
  startFakeAnthropic,
  startNats,
  startNatsCluster,
  startRedis,
  statelessResponder,
} from "@fleet/testkit";
import { createServiceSlot, type ServiceSlot } from "./service-slot.js";
import { chaosPlan } from "./workload-plan.js";

/**
 * Each nats-server's `max_file_store`: a 120 s run of 24 sessions stores far less (the report prints
 * what it used), and the `storage_full` fault fills the rest in a moment.
 */
export const CHAOS_MAX_FILE_STORE = 128 * 1024 ** 2;

export interface SystemSettings {
  cluster: boolean;
  leaseTtlMs: number;
  partitions: number;
  /** Stream groups K of the event log (FLEET_STREAM_GROUPS). */
  groups: number;
  log: (line: string) => void;
  /** Where each service incarnation's output is kept as `<label>-<n>.log`; it outlives the run. */
  logDir?: string;
}

/** NATS as the faults see it: one server, or the nodes of a cluster. */
export interface NatsUnderTest {
  readonly urls: readonly string[];
  readonly nodes: number;
  pid(node: number): number | undefined;
  /** SIGKILL (a crash); the data dir stays. */
  kill(node: number): Promise<void>;
  /** Starts it again on the same port and data dir. */
  restart(node: number): Promise<void>;
  stop(): Promise<void>;
}

export interface System {
  readonly dir: string;
  /** Tool runners' workspace root: a session works in `<workspace>/<sessionId>`. */
  readonly workspace: string;
  readonly nats: NatsUnderTest;
  readonly natsUrl: string;
  readonly redis: RedisServer;
  readonly fake: FakeAnthropic;
  readonly loops: readonly ServiceSlot[];
  readonly runners: readonly ServiceSlot[];
  readonly stores: readonly ServiceSlot[];
  readonly gateways: readonly ServiceSlot[];
  /** The gateways' base URLs (`http://127.0.0.1:<port>`), in the order of `gateways`. */
  readonly gatewayUrls: readonly string[];
  readonly all: readonly ServiceSlot[];
  /** Stops every process; safe to call more than once and after a failed start. */
  stop(): Promise<void>;
  /**
   * For a signal handler that exits right after: SIGKILLs every service, then removes `dir`
   * (the testkit kills nats-server and redis-server on the signal and on exit).
   */
  abort(): Promise<void>;
}

/** Builds the system step by step; whatever started is stopped when a later step fails. */
export async function startSystem(s: SystemSettings): Promise<System> {
  const dir = mkdtempSync(join(tmpdir(), "fleet-chaos-"));
  const workspace = join(dir, "workspaces");
  mkdirSync(workspace);
  const removeDir = () => rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  // Whatever way this process exits, the workspaces go with it.
  process.once("exit", removeDir);
  const stops: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    for (const stop of stops.splice(0).reverse()) await stop().catch(() => undefined);
    removeDir();
    process.off("exit", removeDir);
  };
  try {
    // A store limit the run stays well below, so that the `storage_full` fault fills it in a moment.
    const jetstream = { maxFileStore: CHAOS_MAX_FILE_STORE };
    const nats = s.cluster
      ? clusterUnderTest(await startNatsCluster(3, { jetstream }))
      : singleUnderTest(await startNats({ jetstream }));
    stops.push(() => nats.stop());
    const natsUrl = nats.urls.join(",");
    const redis = await startRedis();
    stops.push(() => redis.stop());
    const fake = await startFakeAnthropic();
    fake.respondWith(statelessResponder(chaosPlan));
    stops.push(() => fake.stop());

    const common = {
      NATS_URL: natsUrl,
      FLEET_PARTITIONS: String(s.partitions),
      FLEET_STREAM_GROUPS: String(s.groups),
      FLEET_STREAM_REPLICAS: s.cluster ? "3" : "1",
      FLEET_OPS_PORT: "0",
      FLEET_SHUTDOWN_GRACE_MS: "2000",
    };
    const loops = [0, 1].map((i) =>
      createServiceSlot(
        "loop",
        i,
        (id) => ({
          ...common,
          FLEET_WORKER_ID: id,
          FLEET_LEASE_TTL_MS: String(s.leaseTtlMs),
          // Every command delivery and ack is logged, so a command without an outcome can be traced.
          LOG_LEVEL: "debug",
          FLEET_PROVIDER: "anthropic",
          ANTHROPIC_API_KEY: "sk-chaos-fake",
          ANTHROPIC_BASE_URL: fake.url,
        }),
        s.log,
        s.logDir,
      ),
    );
    const runners = [0, 1].map((i) =>
      createServiceSlot(
        "tools",
        i,
        (id) => ({ ...common, FLEET_RUNNER_ID: id, FLEET_WORKSPACE: workspace, FLEET_TOOLS: "bash,write" }),
        s.log,
        s.logDir,
      ),
    );
    const stores = [0, 1].map((i) =>
      createServiceSlot(
        "store",
        i,
        (id) => ({ ...common, FLEET_WORKER_ID: id, REDIS_URL: redis.url, FLEET_LEASE_TTL_MS: String(s.leaseTtlMs) }),
        s.log,
        s.logDir,
      ),
    );
    const gatewayPorts = [await getFreePort(), await getFreePort()];
    const gateways = gatewayPorts.map((port, i) =>
      createServiceSlot(
        "gateway",
        i,
        () => ({
          ...common,
          FLEET_GATEWAY_HOST: "127.0.0.1",
          FLEET_GATEWAY_PORT: String(port),
          // The run's webhook receiver listens on 127.0.0.1; retries stay quick, and a run of the
          // receiver's failures never disables it.
          FLEET_WEBHOOK_ALLOW_PRIVATE: "1",
          FLEET_GATEWAY_WEBHOOK_BACKOFF_MS: "200",
          FLEET_GATEWAY_WEBHOOK_BACKOFF_MAX_MS: "2000",
          FLEET_GATEWAY_WEBHOOK_MAX_FAILURES: "100000",
        }),
        s.log,
        s.logDir,
      ),
    );
    const gatewayUrls = gatewayPorts.map((port) => `http://127.0.0.1:${port}`);
    const all = [...loops, ...runners, ...stores, ...gateways];
    stops.push(async () => {
      await Promise.all(all.map((slot) => slot.stop()));
    });
    // The first loop worker creates the topology; the rest start together.
    await loops[0]?.start();
    await Promise.all(all.slice(1).map((slot) => slot.start()));
    const abort = async () => {
      await Promise.all(all.map((slot) => slot.abort()));
      removeDir();
    };
    return {
      dir,
      workspace,
      nats,
      natsUrl,
      redis,
      fake,
      loops,
      runners,
      stores,
      gateways,
      gatewayUrls,
      all,
      stop: stopAll,
      abort,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

function singleUnderTest(server: NatsServer): NatsUnderTest {
  return {
    urls: [server.url],
    nodes: 1,
    pid: () => server.pid,
    kill: async () => {
      if (server.pid !== undefined) process.kill(server.pid, "SIGKILL");
      await new Promise((r) => setTimeout(r, 100));
    },
    restart: () => server.restart(),
    stop: () => server.stop(),
  };
}

function clusterUnderTest(cluster: NatsCluster): NatsUnderTest {
  return {
    urls: cluster.urls,
    nodes: cluster.nodes.length,
    pid: (i) => cluster.nodes[i]?.pid,
    kill: (i) => cluster.kill(i, "SIGKILL"),
    restart: (i) => cluster.restart(i),
    stop: () => cluster.stop(),
  };
}
