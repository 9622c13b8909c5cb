import { type NatsServer, startNats } from "@fleet/testkit";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readKvEntries } from "./kv-entries.js";
import { connectNats } from "./nats-connection.js";

let server: NatsServer;
let nc: NatsConnection;

beforeAll(async () => {
  server = await startNats();
  nc = await connectNats({ url: server.url, name: "kv-entries-test" });
});
afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("readKvEntries", () => {
  it("lists the current PUT entries under a filter, in key order, without deleted, purged or other keys", async () => {
    const kv = await new Kvm(nc).create("entries_list", { history: 3 });
    await kv.put("loop.w.b", "b1");
    await kv.put("loop.w.a", "a1");
    await kv.put("loop.w.b", "b2");
    await kv.put("loop.w.gone", "x");
    await kv.delete("loop.w.gone");
    await kv.put("loop.w.purged", "x");
    await kv.purge("loop.w.purged");
    await kv.put("loop.p.1", "lease");
    await kv.put("runner.r1", "presence");

    const workers = await readKvEntries(kv, "loop.w.*");
    expect(workers.map((e) => [e.key, e.string()])).toEqual([
      ["loop.w.a", "a1"],
      ["loop.w.b", "b2"],
    ]);
    expect((await readKvEntries(kv)).map((e) => e.key)).toEqual(["loop.p.1", "loop.w.a", "loop.w.b", "runner.r1"]);
    expect(await readKvEntries(kv, "store.w.*")).toEqual([]);
  });

  // nats.js kv.keys() waited for its consumer's 30 s idle heartbeat when a counted key aged out
  // before delivery, which is what a lease holder's liveness read hit in the failover test.
  it("answers at once while keys age out of a bucket with a TTL", async () => {
    const kv = await new Kvm(nc).create("entries_ttl", { history: 1, ttl: 300 });
    const seen = new Set<number>();
    for (let round = 0; round < 10; round++) {
      await kv.put(`loop.w.r${round}`, "x");
      const putAt = Date.now();
      await sleep(260);
      while (Date.now() - putAt < 360) {
        const started = Date.now();
        const keys = (await Promise.race([readKvEntries(kv, "loop.w.*"), sleep(5_000).then(() => null)]))?.map(
          (e) => e.key,
        );
        expect(keys, `a read ${started - putAt} ms after the put did not answer within 5 s`).not.toBeNull();
        expect((keys ?? []).every((k) => k === `loop.w.r${round}`)).toBe(true);
        seen.add(keys?.length ?? -1);
      }
      await sleep(100);
    }
    // The sweep crossed the expiry: the key was read both present and gone.
    expect([...seen].sort()).toEqual([0, 1]);
  });
});
