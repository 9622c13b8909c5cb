// A rebuild shared by the store instances (group-build.ts): with K = 3 and two store processes
// running, `cli rebuild` offers the three groups; each group is replayed exactly once, by whichever
// process took its lease (the stores take some), and the new namespace holds every session as the
// log folds it.
import type { FleetEvent } from "@fleet/protocol";
import { syntheticEvents } from "@fleet/session-store/testing";
import { describe, expect, it } from "vitest";
import {
  canonicalTree,
  expectedTree,
  Publisher,
  runCli,
  spawnStore,
  storedTree,
  useStoreFixture,
  waitFor,
  waitProjected,
} from "./support.js";

const fixture = useStoreFixture({ partitions: 6, groups: 3, leaseTtlMs: 1_500 });

const groupsDone = (log: string) => [...log.matchAll(/"evt":"store_rebuild_group_done"[^\n]*"group":(\d+)/g)];

describe("a rebuild shared by the store instances", () => {
  it("replays each stream group once, on any instance, and switches to a complete namespace", async () => {
    const f = fixture.f;
    const logs = new Map<string, FleetEvent[]>();
    for (let i = 0; i < 24; i++) {
      const sid = `sh-${i}`;
      logs.set(sid, syntheticEvents({ sessionId: sid, seed: 300 + i, runs: 8, branchRate: 0.2, labelRate: 0.2 }));
    }
    const publisher = new Publisher(f.js, f.partitions);
    await publisher.publishInterleaved([...logs.values()]);
    // The stores look for open groups every 50 ms, so they take the groups the builder has not reached.
    const a = await spawnStore(f, { env: { FLEET_WORKER_ID: "sh-a", FLEET_STORE_HEAL_CHECK_MS: "50" } });
    const b = await spawnStore(f, { env: { FLEET_WORKER_ID: "sh-b", FLEET_STORE_HEAL_CHECK_MS: "50" } });
    fixture.procs.push(a, b);
    await waitProjected(f, publisher, 60_000);
    const before = await f.redis.hget(`${f.prefix}:ctl`, "ns");
    const startOfA = a.output().length;
    const startOfB = b.output().length;

    const cli = await spawnStore(f, {
      script: "cli",
      args: ["rebuild", "--grace-ms", "200"],
      readyPattern: null,
      // Batches of 5 events make each group's replay take a while, so the stores (checking every
      // 50 ms) take the groups the builder has not reached yet.
      env: { LOG_LEVEL: "info", FLEET_STORE_BATCH: "5" },
    });
    const code = await new Promise<number | null>((r) => {
      if (cli.child.exitCode !== null) r(cli.child.exitCode);
      else cli.child.once("exit", (c) => r(c));
    });
    expect(code, cli.output()).toBe(0);
    const after = await f.redis.hget(`${f.prefix}:ctl`, "ns");
    expect(after).not.toBe(before);

    const done = {
      cli: groupsDone(cli.output()).map((m) => Number(m[1])),
      a: groupsDone(a.output().slice(startOfA)).map((m) => Number(m[1])),
      b: groupsDone(b.output().slice(startOfB)).map((m) => Number(m[1])),
    };
    console.log(`stream groups replayed: cli ${done.cli}, store a ${done.a}, store b ${done.b}`);
    expect([...done.cli, ...done.a, ...done.b].sort()).toEqual([0, 1, 2]);
    expect(done.a.length + done.b.length).toBeGreaterThan(0);
    expect(await f.redis.exists(`${f.prefix}:build`)).toBe(0);

    await waitProjected(f, publisher);
    for (const [sid, events] of logs) {
      const stored = await waitFor(`${sid} in the new namespace`, async () => (await storedTree(f, sid)) ?? undefined);
      expect(canonicalTree(stored.tree), sid).toEqual(expectedTree(events));
    }
    const verified = await runCli(f, ["verify", "--wait-ms", "5000"]);
    expect(verified.output).toMatch(/0 difference\(s\)/);
  }, 180_000);
});
