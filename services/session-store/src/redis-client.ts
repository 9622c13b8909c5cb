/**
 * The store's Redis connection: one Redis (`redis://`, `rediss://`) or a Redis Cluster
 * (`redis+cluster://[user:password@]host:port[,host:port…]`, `rediss+cluster://` with TLS; the nodes
 * are seeds, ioredis discovers the rest). Every multi-key command and script of the store names keys
 * of one hash slot (keys.ts), so the same code runs on both.
 */
import { Cluster, Redis } from "ioredis";

export type RedisClient = Redis | Cluster;

export type RedisTarget =
  | { kind: "single"; url: string }
  | {
      kind: "cluster";
      nodes: Array<{ host: string; port: number }>;
      username?: string;
      password?: string;
      tls: boolean;
    };

const CLUSTER_URL = /^(rediss?)\+cluster:\/\/(?:([^@/]*)@)?([^/?#]+)\/?$/;

/** Reads a `REDIS_URL`; throws a clear error for a malformed cluster URL. */
export function parseRedisTarget(url: string): RedisTarget {
  const m = CLUSTER_URL.exec(url);
  if (!m) {
    if (/^rediss?\+cluster:/.test(url)) throw new Error(`REDIS_URL ${url}: expected redis+cluster://host:port[,…]`);
    return { kind: "single", url };
  }
  const [, scheme, auth, hosts] = m as unknown as [string, string, string | undefined, string];
  const nodes = hosts.split(",").map((hp) => {
    const at = hp.lastIndexOf(":");
    const host = at > 0 ? hp.slice(0, at) : hp;
    const port = at > 0 ? Number(hp.slice(at + 1)) : 6379;
    if (host === "" || !Number.isInteger(port) || port < 1 || port > 65535) {
      throw new Error(`REDIS_URL: bad cluster node ${JSON.stringify(hp)}`);
    }
    return { host, port };
  });
  const [user, password] = auth === undefined ? [] : auth.split(":", 2).map(decodeURIComponent);
  return {
    kind: "cluster",
    nodes,
    ...(user ? { username: user } : {}),
    ...(password !== undefined ? { password } : {}),
    tls: scheme === "rediss",
  };
}

/** Connects the store's way: pipelined automatically, retrying while Redis (or a node) is down. */
export function connectRedis(url: string): RedisClient {
  const target = parseRedisTarget(url);
  if (target.kind === "single") {
    return new Redis(url, { enableAutoPipelining: true, maxRetriesPerRequest: 20, lazyConnect: false });
  }
  return new Cluster(target.nodes, {
    enableAutoPipelining: true,
    // Auto-pipelining groups commands by the slot of their first argument: a script's is its sha.
    autoPipeliningIgnoredCommands: ["eval", "evalsha"],
    clusterRetryStrategy: (times) => Math.min(100 * times, 2_000),
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 300,
    redisOptions: {
      maxRetriesPerRequest: 20,
      ...(target.username ? { username: target.username } : {}),
      ...(target.password !== undefined ? { password: target.password } : {}),
      ...(target.tls ? { tls: {} } : {}),
    },
  });
}

/** The servers holding data: the cluster's masters, or the one Redis. */
export const dataNodes = (redis: RedisClient): Redis[] => (redis instanceof Cluster ? redis.nodes("master") : [redis]);

/**
 * Calls `onKeys` with every key matching `pattern` (SCAN on every master in a cluster), in batches;
 * `onKeys` receives the node the keys live on, to act on them there.
 */
export async function scanKeys(
  redis: RedisClient,
  pattern: string,
  onKeys: (node: Redis, keys: string[]) => Promise<void> | void,
): Promise<void> {
  for (const node of dataNodes(redis)) {
    let cursor = "0";
    do {
      const [next, keys] = await node.scan(cursor, "MATCH", pattern, "COUNT", 1000);
      cursor = next;
      if (keys.length > 0) await onKeys(node, keys);
    } while (cursor !== "0");
  }
}

/** Unlinks keys of one node one command each (keys of several slots), pipelined; returns how many existed. */
export async function unlinkOn(node: Redis, keys: readonly string[]): Promise<number> {
  const pipeline = node.pipeline();
  for (const key of keys) pipeline.unlink(key);
  let n = 0;
  for (const [err, count] of (await pipeline.exec()) ?? []) if (!err) n += Number(count);
  return n;
}
