import { existsSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { listRunningServers } from "./cleanup-registry.js";
import { isPidAlive } from "./process-alive.js";
import { type RedisCluster, startRedisCluster } from "./redis-cluster.js";
import { type RedisReply, sendRedisCommand } from "./redis-command.js";

let cluster: RedisCluster | undefined;

afterAll(async () => {
  await cluster?.stop();
});

/** Sends a keyed command to the master that serves the key (the others answer MOVED). */
async function onOwner(c: RedisCluster, args: string[]): Promise<{ node: number; reply: RedisReply }> {
  for (const [i, n] of c.nodes.entries()) {
    const reply = await sendRedisCommand(n.port, args);
    const moved = typeof reply === "object" && reply !== null && "error" in reply && /^MOVED/.test(reply.error);
    if (!moved) return { node: i, reply };
  }
  throw new Error("no node owns the key");
}

describe("testkit / startRedisCluster", () => {
  it("makes a 3-master cluster serving every slot, on free ports, in temp dirs", async () => {
    cluster = await startRedisCluster();
    expect(cluster.nodes).toHaveLength(3);
    expect(cluster.url).toBe(`redis+cluster://${cluster.nodes.map((n) => `127.0.0.1:${n.port}`).join(",")}`);
    for (const n of cluster.nodes) {
      expect(n.port).not.toBe(6379);
      const info = String(await sendRedisCommand(n.port, ["CLUSTER", "INFO"]));
      expect(info).toMatch(/cluster_state:ok/);
      expect(info).toMatch(/cluster_known_nodes:3/);
      expect(info).toMatch(/cluster_size:3/);
    }
  });

  it("restartNode keeps the node's data and the cluster's state", async () => {
    const c = cluster as RedisCluster;
    const written = await onOwner(c, ["SET", "kept", "v"]);
    expect(written.reply).toBe("OK");
    const node = c.nodes[written.node];
    const pid = node?.pid as number;
    await c.restartNode(written.node);
    expect(isPidAlive(pid)).toBe(false);
    expect(node?.pid).not.toBe(pid);
    expect(await sendRedisCommand(node?.port as number, ["GET", "kept"])).toBe("v");
  });

  it("stop() stops every node and removes their dirs", async () => {
    const c = cluster as RedisCluster;
    const pids = c.nodes.map((n) => n.pid as number);
    await c.stop();
    for (const pid of pids) expect(isPidAlive(pid)).toBe(false);
    for (const n of c.nodes) expect(existsSync(n.dataDir)).toBe(false);
    expect(listRunningServers().filter((l) => /redis/.test(l))).toEqual([]);
  });
});
