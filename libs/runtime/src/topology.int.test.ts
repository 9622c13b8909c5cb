import { STREAMS } from "@fleet/protocol";
import { type NatsServer, startNats } from "@fleet/testkit";
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkServer, connectNats } from "./nats-connection.js";
import { applyTopology } from "./topology.js";

let server: NatsServer;
beforeAll(async () => {
  server = await startNats();
});
afterAll(async () => {
  await server?.stop();
});

describe("topology", () => {
  it("creates every stream, bucket and store idempotently with no drift, and fixes the partition count once", async () => {
    const nc = await connectNats({ url: server.url, name: "topo" });
    try {
      const caps = await checkServer(nc);
      expect(caps.ok).toBe(true);
      const first = await applyTopology(nc, { partitions: 8 });
      expect(first.drift).toEqual([]);
      expect(first.partitions).toBe(8);
      const second = await applyTopology(nc, { partitions: 32 });
      expect(second.partitions).toBe(8);
      expect(second.drift).toEqual(["fleet_config.partitions is 8 (fixed once written); requested 32 ignored"]);
      const jsm = await jetstreamManager(nc);
      const names: string[] = [];
      for await (const s of jsm.streams.list()) names.push(s.config.name);
      for (const spec of Object.values(STREAMS)) expect(names).toContain(spec.name);
      expect(names).toEqual(
        expect.arrayContaining(["KV_fleet_config", "KV_fleet_leases", "KV_fleet_tools", "OBJ_fleet_blobs"]),
      );
    } finally {
      await nc.close();
    }
  });

  it("reports drift when a stream exists with another config, and leaves it unchanged", async () => {
    const fresh = await startNats();
    const nc = await connectNats({ url: fresh.url, name: "drift" });
    try {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: "FLEET_EVENTS", subjects: ["fleet.evt.>"], duplicate_window: 5_000_000_000 });
      const topo = await applyTopology(nc);
      expect(topo.drift.some((d) => d.startsWith("stream FLEET_EVENTS: duplicate_window is 5000000000"))).toBe(true);
      expect(topo.drift.some((d) => d.startsWith("stream FLEET_EVENTS: deny_delete"))).toBe(true);
      expect((await jsm.streams.info("FLEET_EVENTS")).config.duplicate_window).toBe(5_000_000_000);
    } finally {
      await nc.close();
      await fresh.stop();
    }
  });
});
