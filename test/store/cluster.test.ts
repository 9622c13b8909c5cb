// The store against a real 3-master Redis Cluster (testkit `startRedisCluster`, `redis+cluster://`):
// the projection with two stream groups, a SIGKILLed store, a node restart, the index queries
// compared with a full scan, `list_sessions` paging, a rebuild and `verify`.
import { StoreReply } from "@fleet/protocol";
import { ALL_SHARDS, indexKeys } from "@fleet/session-store/testing";
import { type Cluster, Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { expectIndexesMatch, randomLogs, waitApplied } from "./index-scenario.js";
import { Publisher, query, runCli, spawnStore, useStoreFixture, waitFor } from "./support.js";

const fixture = useStoreFixture({ partitions: 4, groups: 2, leaseTtlMs: 1_500, redisCluster: true });

/** Every session of `list_sessions`, page by page. */
async function listAll(): Promise<Array<{ sessionId: string; updatedAt: number }>> {
  const out: Array<{ sessionId: string; updatedAt: number }> = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 1_000; pages++) {
    const page = await query(fixture.f.nc, "list_sessions", { limit: 4, ...(cursor ? { cursor } : {}) });
    expect(StoreReply.list_sessions.safeParse(page).success).toBe(true);
    out.push(...(page.sessions as Array<{ sessionId: string; updatedAt: number }>));
    cursor = page.cursor as string | undefined;
    if (!cursor) break;
  }
  return out;
}

describe("the session store on a Redis Cluster", () => {
  it("projects, answers every query, survives a SIGKILL and a node restart, rebuilds and verifies", async () => {
    const f = fixture.f;
    expect(f.redisCluster?.nodes.length).toBe(3);
    const logs = randomLogs(40, 777);
    const publisher = new Publisher(f.js, f.partitions);
    const first = await spawnStore(f, { env: { FLEET_WORKER_ID: "cl-a", FLEET_STORE_BATCH: "20" } });
    fixture.procs.push(first);
    const publishing = publisher.publishInterleaved([...logs.values()]);
    await waitFor("the projection to start", async () => Number(await f.redis.exists(`${f.prefix}:ctl`)) === 1);
    await first.kill("SIGKILL");
    const second = await spawnStore(f, { env: { FLEET_WORKER_ID: "cl-b" } });
    fixture.procs.push(second);
    await publishing;
    await waitApplied(f, publisher);
    const expected = await expectIndexesMatch(f, logs, publisher);
    expect(expected.running.length).toBeGreaterThan(2);

    // The shards' keys are spread over the three masters.
    const ns = (await f.redis.hget(`${f.prefix}:ctl`, "ns")) as string;
    const holders = new Set<string>();
    for (const k of ALL_SHARDS) {
      const slot = Number(await f.redis.call("CLUSTER", "KEYSLOT", indexKeys(f.prefix, ns, k).sessions));
      const node = (f.redis as Cluster).slots[slot]?.[0];
      if (node) holders.add(node);
    }
    expect(holders.size).toBe(3);

    // list_sessions: every live session once, most recently updated first.
    const listed = await listAll();
    const live = [...logs].filter(([, log]) => log.at(-1)?.type !== "session_deleting").map(([sid]) => sid);
    expect(listed.map((s) => s.sessionId).sort()).toEqual([...live].sort());
    for (let i = 1; i < listed.length; i++) {
      expect((listed[i - 1]?.updatedAt ?? 0) >= (listed[i]?.updatedAt ?? 0)).toBe(true);
    }

    // A master restarts (its append-only file keeps its data): the store goes on projecting.
    await f.redisCluster?.restartNode(1);
    const extra = new Map([...randomLogs(48, 778)].filter(([sid]) => !logs.has(sid)));
    for (const [sid, log] of extra) logs.set(sid, log);
    await publisher.publishInterleaved([...extra.values()]);
    await waitApplied(f, publisher);
    await expectIndexesMatch(f, logs, publisher);

    // A rebuild fills a fresh namespace on the cluster, drops the old one on every master.
    const rebuilt = await runCli(f, ["rebuild", "--grace-ms", "200"]);
    expect(rebuilt.code, rebuilt.output).toBe(0);
    const nsAfter = await f.redis.hget(`${f.prefix}:ctl`, "ns");
    expect(nsAfter).not.toBe(ns);
    for (const node of f.redisCluster?.nodes ?? []) {
      const direct = new Redis(node.url);
      expect(await direct.keys(`${f.prefix}:${ns}:*`)).toEqual([]);
      direct.disconnect();
    }
    await waitApplied(f, publisher);
    await expectIndexesMatch(f, logs, publisher);

    const verified = await runCli(f, ["verify", "--wait-ms", "5000"]);
    expect(verified.output).toMatch(/0 difference\(s\)/);
    expect(verified.code).toBe(0);
  }, 240_000);
});
