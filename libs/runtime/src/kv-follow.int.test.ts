// followKv when its watch fails. On a 3-node cluster, the node that the follower's connection and the
// bucket's leader are on is SIGKILLed: without a new watch after the reconnect, the follower heard
// nothing more (the loop then saw every tool runner as gone and failed calls with "No live tool
// runner serves ..."). On one server, a watch that ends is made again, and a silent one is covered
// by the periodic read.
import { type NatsCluster, type NatsServer, startNats, startNatsCluster } from "@fleet/testkit";
import { jetstreamManager } from "@nats-io/jetstream";
import { type KV, Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { followKv, type KvFollower } from "./kv-follow.js";
import { connectNats } from "./nats-connection.js";
import { applyTopology } from "./topology.js";

let cluster: NatsCluster;
let server: NatsServer;
const connections: NatsConnection[] = [];
const followers: KvFollower[] = [];
beforeAll(async () => {
  [cluster, server] = await Promise.all([startNatsCluster(), startNats()]);
}, 60_000);
afterAll(async () => {
  for (const f of followers) f.stop();
  for (const nc of connections) await nc.close().catch(() => undefined);
  await cluster?.stop();
  await server?.stop();
});

/** A watch that never yields and never ends: what a watch whose consumer died looks like. */
const silentWatch = async () => ({
  stop() {},
  [Symbol.asyncIterator]: () => ({ next: () => new Promise<IteratorResult<never>>(() => undefined) }),
});

describe("followKv / a watch that fails on one server", () => {
  const values = (seen: string[]) => seen.map((s) => s.split(" ").slice(2).join(" "));

  it("makes a watch that ended again, and delivers every value once, in order", async () => {
    const nc = await connectNats({ url: server.url, name: "kv-follow-ended" });
    connections.push(nc);
    const kv = await new Kvm(nc).create("follow_ended");
    const realWatch = kv.watch.bind(kv);
    let watches = 0;
    // The first watch ends at once; the next ones are real.
    (kv as { watch: KV["watch"] }).watch = async (opts) => {
      watches++;
      const iter = await realWatch(opts);
      if (watches === 1) iter.stop();
      return iter;
    };
    const seen: string[] = [];
    const f = followKv(
      kv,
      undefined,
      (key, op, value) => seen.push(`${key} ${op} ${new TextDecoder().decode(value)}`),
      {
        retryMs: 50,
      },
    );
    followers.push(f);
    await f.ready;
    for (let i = 0; i < 5; i++) await kv.put("k", `v${i}`);
    await expect.poll(() => values(seen), { timeout: 5_000 }).toContain("v4");
    expect(watches).toBeGreaterThanOrEqual(2);
    expect(values(seen)).toEqual([...new Set(values(seen))]);
    expect(values(seen).map((v) => Number(v.slice(1)))).toEqual(
      [...values(seen).map((v) => Number(v.slice(1)))].sort(),
    );
  });

  it("is ready only once the contents could be read: a failed first read is tried again", async () => {
    const nc = await connectNats({ url: server.url, name: "kv-follow-ready" });
    connections.push(nc);
    const kv = await new Kvm(nc).create("follow_ready");
    await kv.put("runner.r", "live");
    const streams = (kv as unknown as { jsm: { streams: { info: (...a: unknown[]) => Promise<unknown> } } }).jsm
      .streams;
    const realInfo = streams.info.bind(streams);
    let failures = 0;
    // The first two reads fail, as they do while the server restarts.
    streams.info = async (...args) => {
      if (failures < 2) {
        failures++;
        throw new Error("TimeoutError: timeout");
      }
      return realInfo(...args);
    };
    const seen: string[] = [];
    const f = followKv(kv, undefined, (key, op) => seen.push(`${key} ${op}`), { retryMs: 50 });
    followers.push(f);
    (kv as { watch: unknown }).watch = silentWatch;
    await f.ready;
    expect(failures).toBe(2);
    expect(seen).toEqual(["runner.r PUT"]);
  });

  it("with resyncMs, delivers new values even while the watch stays silent", async () => {
    const nc = await connectNats({ url: server.url, name: "kv-follow-silent" });
    connections.push(nc);
    const kv = await new Kvm(nc).create("follow_silent");
    (kv as { watch: unknown }).watch = silentWatch;
    const seen: string[] = [];
    const f = followKv(
      kv,
      undefined,
      (key, op, value) => seen.push(`${key} ${op} ${new TextDecoder().decode(value)}`),
      {
        resyncMs: 100,
      },
    );
    followers.push(f);
    await kv.put("runner.a", "one");
    await expect.poll(() => seen, { timeout: 3_000 }).toEqual(["runner.a PUT one"]);
    await kv.put("runner.a", "two");
    await expect.poll(() => seen, { timeout: 3_000 }).toEqual(["runner.a PUT one", "runner.a PUT two"]);
  });
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
    const follower = followKv(
      await new Kvm(watcherNc).open("fleet_leases"),
      "runner.>",
      (key, operation, value) => seen.push(`${key} ${operation} ${new TextDecoder().decode(value)}`),
      { statuses: () => watcherNc.status() },
    );
    followers.push(follower);
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
