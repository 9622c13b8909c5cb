import { type FleetEvent, KV_BUCKETS, storeGroupLeaseKey } from "@fleet/protocol";
import { syntheticEvents } from "@fleet/session-store/testing";
import { Kvm } from "@nats-io/kv";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  canonicalTree,
  expectedTree,
  type Fixture,
  Publisher,
  query,
  type StoreProcess,
  spawnStore,
  startFixture,
  storedTree,
  waitFor,
  waitProjected,
} from "./support.js";

let f: Fixture;
const procs: StoreProcess[] = [];

beforeAll(async () => {
  f = await startFixture({ partitions: 6, groups: 2, leaseTtlMs: 1_500 });
});

afterAll(async () => {
  for (const p of procs) await p.kill();
  await f?.stop();
});

async function holders(): Promise<Map<number, string>> {
  const kv = await new Kvm(f.nc).open(KV_BUCKETS.leases.name);
  const out = new Map<number, string>();
  for (let g = 0; g < f.groups; g++) {
    const e = await kv.get(storeGroupLeaseKey(g));
    if (e && e.operation === "PUT" && e.length > 0) out.set(g, (e.json() as { workerId: string }).workerId);
  }
  return out;
}

describe("two store instances", () => {
  it("split the stream groups, and killing one hands its group to the other", async () => {
    const a = await spawnStore(f, { env: { FLEET_WORKER_ID: "inst-a" } });
    procs.push(a);
    const b = await spawnStore(f, { env: { FLEET_WORKER_ID: "inst-b" } });
    procs.push(b);
    const split = await waitFor("the groups to be split", async () => {
      const h = await holders();
      const counts = { a: 0, b: 0 };
      for (const w of h.values()) counts[w === "inst-a" ? "a" : "b"]++;
      return h.size === f.groups && counts.a === 1 && counts.b === 1 ? h : false;
    });
    expect([...split.values()].sort()).toEqual(["inst-a", "inst-b"]);

    const logs = new Map<string, FleetEvent[]>();
    for (let i = 0; i < 12; i++) {
      const sid = `ha-${i}`;
      logs.set(sid, syntheticEvents({ sessionId: sid, seed: 700 + i, runs: 16, branchRate: 0.2, labelRate: 0.2 }));
    }
    const publisher = new Publisher(f.js, f.partitions);
    const firstHalf = [...logs.values()].map((evs) => evs.slice(0, evs.length >> 1));
    await publisher.publishInterleaved(firstHalf);
    await waitProjected(f, publisher);
    // Both instances answer queries (queue group): each reply is right whoever serves it.
    for (let i = 0; i < 10; i++) expect((await query(f.nc, "get_tree", { sessionId: "ha-1" })).ok).toBe(true);

    await a.kill("SIGKILL");
    await waitFor(
      "inst-b to hold every group",
      async () => {
        const h = await holders();
        return h.size === f.groups && [...h.values()].every((w) => w === "inst-b");
      },
      20_000,
    );
    await publisher.publishInterleaved([...logs.values()].map((evs) => evs.slice(evs.length >> 1)));
    await waitProjected(f, publisher);
    for (const [sid, events] of logs) {
      const stored = await storedTree(f, sid);
      expect(canonicalTree(stored?.tree as never)).toEqual(expectedTree(events));
      expect(stored?.lastSeq).toBe(publisher.lastSeq.get(sid));
    }
  });
});
