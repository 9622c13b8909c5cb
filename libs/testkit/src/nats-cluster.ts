// A throwaway clustered JetStream (N nodes, full-mesh routes) on free loopback ports.

import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager, StorageType } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { removeTempDir, trackTempDir } from "./cleanup-registry.js";
import { findBinary, missingBinaryError } from "./find-binary.js";
import { getFreePort } from "./free-port.js";
import { type ManagedProcess, spawnManaged } from "./managed-process.js";
import { buildNatsConfig, type JetStreamLimits } from "./nats-config.js";

const HOST = "127.0.0.1";
const READY = /Server is ready/;
const POLL_INTERVAL_MS = 100;

/** Options of `startNatsCluster`. */
export interface NatsClusterOptions {
  /** Extra CLI arguments for every node. */
  readonly args?: readonly string[];
  readonly maxPayload?: number;
  readonly jetstream?: JetStreamLimits;
  /** Timeout for all nodes to be ready and a JetStream meta leader to be elected, default 30 000 ms. */
  readonly startTimeoutMs?: number;
  /** Cluster name, default `fleet-test`. */
  readonly clusterName?: string;
}

/** One node of a `NatsCluster`. */
export interface NatsClusterNode {
  /** `server_name`: `n0`, `n1`, ... */
  readonly name: string;
  readonly url: string;
  readonly port: number;
  readonly clusterPort: number;
  /** PID of the node's current process (changes after `restart(i)`). */
  readonly pid: number;
  readonly dataDir: string;
  /** False between `kill(i)` and `restart(i)`, and after `stop()`. */
  readonly isRunning: boolean;
}

/**
 * A running cluster owned by the caller (local binaries only; no container backend).
 * Contract: `stop()` is idempotent, stops every node and removes all temp dirs. `kill(i)` ends one node
 * (default SIGKILL, a crash) and keeps its store; `restart(i)` brings it back on the same ports and store.
 */
export interface NatsCluster {
  /** Client URLs of all nodes, in node order. */
  readonly urls: readonly string[];
  readonly nodes: readonly NatsClusterNode[];
  stop(): Promise<void>;
  /**
   * Ends node `index` and resolves after its exit. Killing the JetStream meta leader leaves the JetStream API
   * unavailable for a few seconds (raft election, ~6 s on 2.9.10 even after `restart`): use `waitForJetStream`.
   */
  kill(index: number, signal?: NodeJS.Signals): Promise<void>;
  restart(index: number): Promise<void>;
  /**
   * Resolves once a JetStream API call succeeds through the cluster (meta leader elected) and a
   * stream with a replica on every node can be placed (every node is a current peer).
   */
  waitForJetStream(timeoutMs?: number): Promise<void>;
}

interface NodeState {
  readonly name: string;
  readonly port: number;
  readonly clusterPort: number;
  readonly dataDir: string;
  readonly configFile: string;
  proc: ManagedProcess | undefined;
}

/**
 * Starts `size` JetStream nodes routed to each other and resolves once JetStream answers through the cluster.
 * Throws when nats-server is missing (the message names the apt package) or the cluster does not form in time.
 */
export async function startNatsCluster(size = 3, opts: NatsClusterOptions = {}): Promise<NatsCluster> {
  if (!Number.isInteger(size) || size < 1)
    throw new Error(`startNatsCluster: size must be a positive integer, got ${size}`);
  const binary = findBinary("nats-server");
  if (binary === undefined) throw missingBinaryError("nats-server", "nats-server");
  const startTimeoutMs = opts.startTimeoutMs ?? 30_000;
  const rootDir = mkdtempSync(join(tmpdir(), "fleet-nats-cluster-"));
  trackTempDir(rootDir);

  const ports = await distinctFreePorts(size * 2);
  const states: NodeState[] = Array.from({ length: size }, (_, i) => {
    const nodeDir = join(rootDir, `n${i}`);
    mkdirSync(join(nodeDir, "store"), { recursive: true });
    return {
      name: `n${i}`,
      port: ports[i * 2]!,
      clusterPort: ports[i * 2 + 1]!,
      dataDir: join(nodeDir, "store"),
      configFile: join(nodeDir, "nats.conf"),
      proc: undefined,
    };
  });
  for (const state of states) {
    const routes = states.filter((s) => s !== state).map((s) => `nats-route://${HOST}:${s.clusterPort}`);
    const config = buildNatsConfig({
      host: HOST,
      port: state.port,
      storeDir: state.dataDir,
      serverName: state.name,
      ...(opts.maxPayload === undefined ? {} : { maxPayload: opts.maxPayload }),
      ...(opts.jetstream === undefined ? {} : { jetstream: opts.jetstream }),
      cluster: { name: opts.clusterName ?? "fleet-test", port: state.clusterPort, routes },
    });
    writeFileSync(state.configFile, config);
  }

  const startNode = async (state: NodeState): Promise<void> => {
    state.proc = await spawnManaged({
      label: `nats-server ${state.name} :${state.port}`,
      binary,
      args: ["-c", state.configFile, ...(opts.args ?? [])],
      readyPattern: READY,
      startTimeoutMs,
    });
  };
  const urls = states.map((s) => `nats://${HOST}:${s.port}`);
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await Promise.all(states.map((s) => s.proc?.stop()));
    removeTempDir(rootDir);
  };
  const nodeAt = (index: number): NodeState => {
    const state = states[index];
    if (state === undefined) throw new Error(`NatsCluster: no node ${index} (size ${size})`);
    return state;
  };

  const cluster: NatsCluster = {
    urls,
    nodes: states.map((state, i) => ({
      name: state.name,
      url: urls[i]!,
      port: state.port,
      clusterPort: state.clusterPort,
      dataDir: state.dataDir,
      get pid() {
        return state.proc?.pid ?? -1;
      },
      get isRunning() {
        return state.proc?.isRunning ?? false;
      },
    })),
    stop,
    kill: async (index, signal = "SIGKILL") => {
      await nodeAt(index).proc?.kill(signal);
    },
    restart: async (index) => {
      if (stopped) throw new Error("NatsCluster: restart() after stop()");
      const state = nodeAt(index);
      await state.proc?.stop();
      await startNode(state);
    },
    waitForJetStream: (timeoutMs = startTimeoutMs) => waitForJetStream(urls, timeoutMs),
  };

  try {
    await Promise.all(states.map(startNode));
    await cluster.waitForJetStream();
  } catch (error) {
    await stop();
    throw error;
  }
  return cluster;
}

async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await getFreePort());
  return [...ports];
}

async function waitForJetStream(urls: readonly string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const nc = await connect({ servers: [...urls], timeout: 1000, reconnect: false });
      try {
        const jsm = await jetstreamManager(nc, { timeout: 1000 });
        await jsm.getAccountInfo();
        // An elected meta leader may not yet count every node as a peer: until it does, a stream
        // with a replica on every node fails with "no suitable peers for placement". Place one.
        const probe = `${process.pid}_${Date.now()}`;
        await jsm.streams.add({
          name: `TESTKIT_PLACEMENT_${probe}`,
          subjects: [`testkit.placement.${probe}`],
          storage: StorageType.Memory,
          num_replicas: urls.length,
        });
        await jsm.streams.delete(`TESTKIT_PLACEMENT_${probe}`);
        return;
      } finally {
        await nc.close();
      }
    } catch (error) {
      lastError = error;
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
  }
  throw new Error(`NatsCluster: JetStream not ready after ${timeoutMs} ms: ${String(lastError)}`);
}
