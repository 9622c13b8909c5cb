// followKv on a 3-node cluster: the node that the follower's connection and the bucket's leader are
// on is SIGKILLed. Without a new watch after the reconnect, the follower heard nothing more (the
// loop then saw every tool runner as gone and failed calls with "No live tool runner serves ...").
import { type NatsCluster, startNatsCluster } from "@fleet/testkit";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { followKv, type KvFollower } from "./kv-follow.js";
import { connectNats } from "./nats-connection.js";
import { applyTopology } from "./topology.js";

let cluster: NatsCluster;
const connections: NatsConnection[] = [];
let follower: KvFollower | undefined;
beforeAll(async () => {
  cluster = await startNatsCluster();
}, 60_000);
afterAll(async () => {
  follower?.stop();
  for (const nc of connections) await nc.close().catch(() => undefined);
  await cluster?.stop();
});

describe("followKv / a cluster node dies", () => {
  it("keeps delivering puts after the node its connection and the bucket's leader were on is killed", async () => {
    const nc = await connectNats({ url: cluster.urls.join(","), name: "kv-follow-writer" });
    connections.push(nc);
    await applyTopology(nc, { partitions: 4, replicas: 3 });
    const jsm = await jetstreamManager(nc);
    const leader = (await jsm.streams.info("KV_fleet_leases")).cluster?.leader;
    const index = cluster.nodes.findIndex((n) => n.name === leader);
    expect(index).toBeGreaterThanOrEqual(0);
    const watcherNc = await connectNats({ url: cluster.urls[index] as string, name: "kv-follow-watcher" });
    connections.push(watcherNc);
    const seen: string[] = [];
    follower = followKv(
      await new Kvm(watcherNc).open("fleet_leases"),
      "runner.>",
      (key, operation, value) => seen.push(`${key} ${operation} ${new TextDecoder().decode(value)}`),
      { statuses: () => watcherNc.status() },
    );
    await follower.ready;
    const writer = await new Kvm(nc).open("fleet_leases");
    await writer.put("runner.a", "before");
    await expect.poll(() => seen, { timeout: 5_000 }).toContain("runner.a PUT before");

    await cluster.kill(index);
    const deadline = Date.now() + 40_000;
    let n = 0;
    while (!seen.some((s) => s.startsWith("runner.a PUT after")) && Date.now() < deadline) {
      await writer.put("runner.a", `after ${n++}`).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(seen.filter((s) => s.startsWith("runner.a PUT after")).length).toBeGreaterThan(0);
    // In the order stored, none twice.
    const values = seen.map((s) => s.split(" ").slice(2).join(" "));
    expect(new Set(values).size).toBe(values.length);
  }, 90_000);
});
