// Every topology setting has one source whichever service provisions first: the tool runner started
// alone creates fleet_leases with FLEET_LEASE_TTL_MS and fleet_config with FLEET_PARTITIONS, as loop
// and store do; a later service asking for another TTL gets the bucket's and a drift line.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LoopEnv } from "@fleet/loop";
import { applyTopology, connectNats, parseEnv, topologyFromEnv } from "@fleet/runtime";
import { StoreEnv } from "@fleet/session-store";
import { type NatsServer, startNats } from "@fleet/testkit";
import { ToolsEnv } from "@fleet/tools";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServiceProcess, spawnService } from "../support/service-process.js";

let server: NatsServer;
let dir: string;
let runner: ServiceProcess | undefined;
beforeAll(async () => {
  server = await startNats();
  dir = mkdtempSync(join(tmpdir(), "fleet-topology-"));
});
afterAll(async () => {
  await runner?.stop();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const ENV = { FLEET_LEASE_TTL_MS: "2000", FLEET_PARTITIONS: "8", FLEET_STREAM_REPLICAS: "1" };

describe("topology settings, one source", () => {
  it("loop, store and tool runner read the same settings from the same environment", () => {
    const settings = [LoopEnv, StoreEnv, ToolsEnv].map((schema) => {
      const env = parseEnv(schema, ENV);
      if (!env.ok) throw new Error(env.error);
      return topologyFromEnv(env.config);
    });
    expect(settings).toEqual([
      { partitions: 8, leaseTtlMs: 2_000, replicas: 1 },
      { partitions: 8, leaseTtlMs: 2_000, replicas: 1 },
      { partitions: 8, leaseTtlMs: 2_000, replicas: 1 },
    ]);
  });

  it("a tool runner that provisions first creates fleet_leases with FLEET_LEASE_TTL_MS; a later different TTL is drift", async () => {
    runner = spawnService("tools", {
      NATS_URL: server.url,
      ...ENV,
      FLEET_SANDBOX: "off",
      FLEET_WORKSPACE: dir,
      FLEET_OPS_PORT: "0",
    });
    await runner.waitForLog();
    const nc = await connectNats({ url: server.url, name: "topology-source" });
    try {
      const same = await applyTopology(nc, { partitions: 8, leaseTtlMs: 2_000 });
      expect(same.leaseTtlMs).toBe(2_000);
      expect(same.partitions).toBe(8);
      expect(same.drift).toEqual([]);
      const other = await applyTopology(nc, { leaseTtlMs: 5_000 });
      expect(other.leaseTtlMs).toBe(2_000);
      expect(other.drift).toEqual(["fleet_leases TTL is 2000 ms (fixed once created); requested 5000 ms ignored"]);
    } finally {
      await nc.close();
    }
  }, 60_000);
});
