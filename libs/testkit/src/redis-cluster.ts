// A throwaway Redis Cluster: N masters (no replicas) on free loopback ports, each in its own temp dir.

import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { findBinary } from "./find-binary.js";
import { getFreePort } from "./free-port.js";
import { sendRedisCommand } from "./redis-command.js";
import { type RedisServer, startRedis } from "./redis-server.js";

const run = promisify(execFile);

/** Options of `startRedisCluster`. */
export interface RedisClusterOptions {
  /** Masters, default 3 (the least `redis-cli --cluster create` accepts). */
  readonly masters?: number;
  /**
   * Default true: each node writes an append-only file (fsync always), so `restartNode` keeps its
   * data as a persistent production node would. False: a restarted node comes back empty.
   */
  readonly persistent?: boolean;
  /** Readiness timeout of the whole cluster, default 20 000 ms. */
  readonly startTimeoutMs?: number;
}

/**
 * A running Redis Cluster owned by the caller. Contract: every slot is served when it resolves;
 * `stop()` is idempotent and stops every node (also on process exit, via each node's registration).
 */
export interface RedisCluster {
  readonly nodes: readonly RedisServer[];
  /** `redis+cluster://127.0.0.1:<p1>,127.0.0.1:<p2>,…`: the session store's cluster URL form. */
  readonly url: string;
  /** Restarts node `i` (same port, dir and cluster identity) and waits until the cluster is ok again. */
  restartNode(i: number): Promise<void>;
  stop(): Promise<void>;
}

/** Starts `masters` cluster-enabled redis-servers, joins them with `redis-cli --cluster create`, waits for state ok. */
export async function startRedisCluster(opts: RedisClusterOptions = {}): Promise<RedisCluster> {
  const masters = opts.masters ?? 3;
  if (masters < 3) throw new Error("startRedisCluster: a Redis Cluster needs at least 3 masters");
  const timeoutMs = opts.startTimeoutMs ?? 20_000;
  const persistent = opts.persistent ?? true;
  const cli = findBinary("redis-cli");
  if (!cli) throw new Error("startRedisCluster: redis-cli not found in PATH");
  const nodes: RedisServer[] = [];
  const stop = async () => {
    await Promise.all(nodes.map((n) => n.stop()));
  };
  try {
    for (let i = 0; i < masters; i++) {
      const busPort = await getFreePort();
      nodes.push(
        await startRedis({
          backend: "process",
          args: [
            ...["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"],
            ...["--cluster-node-timeout", "2000", "--cluster-port", String(busPort)],
            ...(persistent ? ["--appendonly", "yes", "--appendfsync", "always"] : []),
          ],
        }),
      );
    }
    await run(
      cli,
      ["--cluster", "create", ...nodes.map((n) => `${n.host}:${n.port}`), "--cluster-replicas", "0", "--cluster-yes"],
      { timeout: timeoutMs },
    );
    await waitClusterOk(nodes, timeoutMs);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    nodes,
    url: `redis+cluster://${nodes.map((n) => `${n.host}:${n.port}`).join(",")}`,
    restartNode: async (i) => {
      const node = nodes[i];
      if (!node) throw new Error(`startRedisCluster: no node ${i}`);
      await node.restart();
      await waitClusterOk(nodes, timeoutMs);
    },
    stop,
  };
}

async function waitClusterOk(nodes: readonly RedisServer[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const states = await Promise.all(
      nodes.map(async (n) => String(await sendRedisCommand(n.port, ["CLUSTER", "INFO"], { host: n.host }))),
    );
    if (states.every((s) => /cluster_state:ok/.test(s) && /cluster_slots_ok:16384/.test(s))) return;
    if (Date.now() > deadline) throw new Error(`startRedisCluster: cluster not ok after ${timeoutMs} ms: ${states[0]}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
