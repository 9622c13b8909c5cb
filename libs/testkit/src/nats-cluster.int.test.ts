import { existsSync } from "node:fs";
import { jetstream, jetstreamManager, StorageType } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { afterAll, describe, expect, it } from "vitest";
import { listRunningServers } from "./cleanup-registry.js";
import { type NatsCluster, startNatsCluster } from "./nats-cluster.js";
import { isPidAlive } from "./process-alive.js";

let cluster: NatsCluster | undefined;

afterAll(async () => {
  await cluster?.stop();
});

describe("testkit / startNatsCluster", () => {
  it("forms a 3-node JetStream cluster where a stream with 3 replicas works, also with one node down", async () => {
    cluster = await startNatsCluster(3);
    expect(cluster.nodes.map((n) => n.name)).toEqual(["n0", "n1", "n2"]);
    expect(new Set(cluster.nodes.flatMap((n) => [n.port, n.clusterPort])).size).toBe(6);
    expect(cluster.urls).toEqual(cluster.nodes.map((n) => `nats://127.0.0.1:${n.port}`));
    expect(cluster.nodes.every((n) => n.isRunning && isPidAlive(n.pid))).toBe(true);

    const nc = await connect({ servers: [...cluster.urls], reconnectTimeWait: 50, maxReconnectAttempts: -1 });
    const jsm = await jetstreamManager(nc);
    const created = await jsm.streams.add({
      name: "R3",
      subjects: ["r3.>"],
      storage: StorageType.File,
      num_replicas: 3,
    });
    expect(created.config.num_replicas).toBe(3);
    const js = jetstream(nc);
    expect((await js.publish("r3.a", "one")).seq).toBe(1);
    const info = await jsm.streams.info("R3");
    expect(info.cluster?.name).toBe("fleet-test");
    expect(info.cluster?.replicas?.length).toBe(2);

    // Neither the stream leader nor the node this client is connected to (a request issued while nats.js
    // 3.4 reconnects can be lost).
    const victim = cluster.nodes.findIndex((n) => n.name !== info.cluster?.leader && n.name !== nc.info?.server_name);
    const victimPid = cluster.nodes[victim]!.pid;
    await cluster.kill(victim);
    expect(cluster.nodes[victim]!.isRunning).toBe(false);
    expect(isPidAlive(victimPid)).toBe(false);
    expect((await js.publish("r3.b", "two", { timeout: 5000 })).seq).toBe(2);

    await cluster.restart(victim);
    expect(cluster.nodes[victim]!.isRunning).toBe(true);
    expect(cluster.nodes[victim]!.pid).not.toBe(victimPid);
    await cluster.waitForJetStream();
    expect((await jsm.streams.info("R3")).state.messages).toBe(2);
    await nc.close();
  });

  it("stop() ends every node and removes the store dirs", async () => {
    const c = cluster!;
    const pids = c.nodes.map((n) => n.pid);
    const dirs = c.nodes.map((n) => n.dataDir);
    await c.stop();
    expect(pids.filter(isPidAlive)).toEqual([]);
    expect(dirs.filter((d) => existsSync(d))).toEqual([]);
    expect(c.nodes.map((n) => n.isRunning)).toEqual([false, false, false]);
    expect(listRunningServers()).toEqual([]);
  });
});
