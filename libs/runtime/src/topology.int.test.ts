import { STREAMS } from "@fleet/protocol";
import { type NatsServer, startNats } from "@fleet/testkit";
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkServer, connectNats } from "./nats-connection.js";
import { applyTopology, TopologyChangeError } from "./topology.js";

let server: NatsServer;
beforeAll(async () => {
  server = await startNats();
});
afterAll(async () => {
  await server?.stop();
});

describe("topology", () => {
  it("creates every stream, bucket and store idempotently with no drift, and refuses another partition count", async () => {
    const nc = await connectNats({ url: server.url, name: "topo" });
    try {
      const caps = await checkServer(nc);
      expect(caps.ok).toBe(true);
      const first = await applyTopology(nc, { partitions: 8 });
      expect(first.drift).toEqual([]);
      expect(first.partitions).toBe(8);
      await expect(applyTopology(nc, { partitions: 32 })).rejects.toThrow(
        "the event log has 8 partitions and cannot change to 32 (fixed when the log was made): set FLEET_PARTITIONS=8 or leave it unset, or start a new deployment for another topology",
      );
      // Unset, a service takes the log's.
      const second = await applyTopology(nc);
      expect(second.partitions).toBe(8);
      expect(second.groups).toBe(1);
      expect(second.drift).toEqual([]);
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

  it("makes one stream per group with K = 3, and refuses a change of K on the log", async () => {
    const fresh = await startNats();
    const nc = await connectNats({ url: fresh.url, name: "groups" });
    try {
      const topo = await applyTopology(nc, { partitions: 6, groups: 3 });
      expect(topo.drift).toEqual([]);
      expect(topo.log).toEqual({ partitions: 6, groups: 3 });
      const jsm = await jetstreamManager(nc);
      const events: Record<string, string[]> = {};
      for await (const s of jsm.streams.list()) {
        if (s.config.name.startsWith("FLEET_EVENTS")) events[s.config.name] = s.config.subjects;
      }
      expect(events).toEqual({
        FLEET_EVENTS_G0: ["fleet.evt.0.*", "fleet.evt.3.*", "fleet.evt.lifecycle.*"],
        FLEET_EVENTS_G1: ["fleet.evt.1.*", "fleet.evt.4.*"],
        FLEET_EVENTS_G2: ["fleet.evt.2.*", "fleet.evt.5.*"],
      });
      const again = await applyTopology(nc);
      expect(again.log).toEqual({ partitions: 6, groups: 3 });
      expect(again.drift).toEqual([]);
      const change = applyTopology(nc, { groups: 2 });
      await expect(change).rejects.toBeInstanceOf(TopologyChangeError);
      await expect(change).rejects.toThrow(
        "the event log has 3 stream groups and cannot change to 2 (fixed when the log was made): set FLEET_STREAM_GROUPS=3 or leave it unset",
      );
    } finally {
      await nc.close();
      await fresh.stop();
    }
  });

  it("keeps K = 1 on a log made before groups, and refuses more groups on it", async () => {
    const fresh = await startNats();
    const nc = await connectNats({ url: fresh.url, name: "legacy" });
    try {
      await applyTopology(nc, { partitions: 4 });
      // A log made before groups has `partitions` and no `stream_groups`.
      const config = (await applyTopology(nc)).kv.config;
      await config.purge("stream_groups");
      await expect(applyTopology(nc, { groups: 2 })).rejects.toThrow(
        "the event log has 1 stream groups and cannot change to 2",
      );
      const topo = await applyTopology(nc);
      expect(topo.log).toEqual({ partitions: 4, groups: 1 });
      expect((await config.get("stream_groups"))?.string()).toBe("1");
    } finally {
      await nc.close();
      await fresh.stop();
    }
  });

  it("refuses more groups than partitions before writing anything", async () => {
    const fresh = await startNats();
    const nc = await connectNats({ url: fresh.url, name: "bad" });
    try {
      await expect(applyTopology(nc, { partitions: 2, groups: 3 })).rejects.toThrow(
        "cannot provision the event log: stream groups (3) must not exceed partitions (2)",
      );
      const topo = await applyTopology(nc, { partitions: 4, groups: 2 });
      expect(topo.log).toEqual({ partitions: 4, groups: 2 });
    } finally {
      await nc.close();
      await fresh.stop();
    }
  });
});
