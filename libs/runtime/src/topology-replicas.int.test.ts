// FLEET_STREAM_REPLICAS: on a 3-node cluster every stream and bucket is created with 3 replicas; the
// default stays 1.
import { TENANT_STREAMS } from "@fleet/protocol";
import { type NatsCluster, startNatsCluster } from "@fleet/testkit";
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectNats } from "./nats-connection.js";
import { applyTopology } from "./topology.js";

let cluster: NatsCluster;
beforeAll(async () => {
  cluster = await startNatsCluster();
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
});

describe("topology / replicas", () => {
  it("creates every stream, KV bucket and the object store with 3 replicas, and reports a count that differs", async () => {
    const nc = await connectNats({ url: cluster.urls.join(","), name: "topo-replicas" });
    try {
      const topology = await applyTopology(nc, { replicas: 3 });
      expect(topology.drift).toEqual([]);
      const jsm = await jetstreamManager(nc);
      const replicas: Record<string, number | undefined> = {};
      // the webhooks bucket is the gateway's, created when a gateway starts
      const topologyStreams = TENANT_STREAMS.filter((n) => n !== "KV_fleet_webhooks");
      for (const name of topologyStreams) replicas[name] = (await jsm.streams.info(name)).config.num_replicas;
      expect(replicas).toEqual(Object.fromEntries(topologyStreams.map((n) => [n, 3])));
      const again = await applyTopology(nc, { replicas: 1 });
      expect(again.drift).toContain("stream FLEET_EVENTS: num_replicas is 3, expected 1");
    } finally {
      await nc.close();
    }
  }, 60_000);
});
