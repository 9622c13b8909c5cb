// The store's indexes (PROTOCOL change 44) against a full scan: after a random mix of runs, names,
// labels, approvals, agent versions (change 54) and deletions, with the store SIGKILLed midway and
// Redis flushed (self-heal rebuild), `list_running`, `list_approvals`, `search_sessions` and
// `count_agent_sessions` answer exactly what folding every session's whole log answers.
import { ALL_SHARDS, indexKeys, indexKeysOf } from "@fleet/session-store/testing";
import { describe, expect, it } from "vitest";
import { expectIndexesMatch, randomLogs, waitApplied } from "./index-scenario.js";
import { Publisher, runCli, spawnStore, useStoreFixture, waitFor } from "./support.js";

const fixture = useStoreFixture({ partitions: 4, leaseTtlMs: 1_500 });

describe("store indexes (PROTOCOL change 44)", () => {
  it("match a full scan after random events, a SIGKILLed store and a rebuild after Redis lost its data", async () => {
    const logs = randomLogs(60, 4242);
    const publisher = new Publisher(fixture.f.js, fixture.f.partitions);
    const first = await spawnStore(fixture.f, { env: { FLEET_WORKER_ID: "idx-a", FLEET_STORE_BATCH: "20" } });
    fixture.procs.push(first);
    const publishing = publisher.publishInterleaved([...logs.values()]);
    await waitFor("the projection to start", async () => {
      const ns = await fixture.f.redis.hget(`${fixture.f.prefix}:ctl`, "ns");
      if (ns === null) return false;
      let terms = 0;
      for (const k of ALL_SHARDS) terms += await fixture.f.redis.zcard(indexKeys(fixture.f.prefix, ns, k).search);
      return terms >= 20;
    });
    await first.kill("SIGKILL");
    const second = await spawnStore(fixture.f, { env: { FLEET_WORKER_ID: "idx-b" } });
    fixture.procs.push(second);
    await publishing;
    await waitApplied(fixture.f, publisher);
    const expected = await expectIndexesMatch(fixture.f, logs, publisher);
    // The mix holds every case: runs open and closed, approvals pending, deleted sessions, matches.
    expect(expected.running.length).toBeGreaterThan(3);
    expect(expected.approvals.length).toBeGreaterThan(3);
    expect(expected.search.get("zzz")).toEqual([]);
    expect(expected.search.get("beta")?.length).toBeGreaterThan(2);
    const deleted = [...logs.values()].filter((l) => l.some((e) => e.type === "session_deleting")).length;
    expect(deleted).toBeGreaterThan(2);
    expect(Object.keys(expected.agents).length).toBeGreaterThan(3);

    // Redis loses everything: the store rebuilds from the log, indexes included.
    const nsBefore = await fixture.f.redis.hget(`${fixture.f.prefix}:ctl`, "ns");
    await fixture.f.redis.flushall();
    await waitFor(
      "the store to heal",
      async () => {
        const ns = await fixture.f.redis.hget(`${fixture.f.prefix}:ctl`, "ns");
        return ns !== null && ns !== nsBefore;
      },
      60_000,
    );
    await waitApplied(fixture.f, publisher);
    await expectIndexesMatch(fixture.f, logs, publisher);

    // `verify` compares the live indexes with a replay's, and looks for entries of no session.
    const verified = await runCli(fixture.f, ["verify", "--wait-ms", "5000"]);
    expect(verified.output).toMatch(/0 difference\(s\)/);
    expect(verified.code).toBe(0);

    // A running entry lost and a search entry of no session: verify names both.
    const ns = await fixture.f.redis.hget(`${fixture.f.prefix}:ctl`, "ns");
    const lost = expected.running[0] as string;
    await fixture.f.redis.zrem(indexKeysOf(fixture.f.prefix, ns as string, lost).running, lost);
    await fixture.f.redis.zadd(
      indexKeysOf(fixture.f.prefix, ns as string, "ix-ghost").search,
      0,
      "ghost\u0000name\u0000ix-ghost",
    );
    await fixture.f.redis.hincrby(indexKeys(fixture.f.prefix, ns as string, 0).agents, "ag-z@9", 2);
    const broken = await runCli(fixture.f, ["verify", "--wait-ms", "5000"]);
    expect(broken.output).toContain(`${lost}: indexes[running]: live (absent) != rebuilt 0`);
    expect(broken.output).toMatch(/search index: .*ghost.* is not a term of ix-ghost/);
    expect(broken.output).toContain("agents index: ag-z@9 counts 2 sessions, the sessions say 0");
    expect(broken.code).not.toBe(0);
  }, 180_000);
});
