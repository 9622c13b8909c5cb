import type { FleetEvent } from "@fleet/protocol";
import { sessionKeys, sessionKeysPattern, syntheticEvents } from "@fleet/session-store/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  canonicalTree,
  expectedTree,
  type Fixture,
  Publisher,
  runCli,
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
  f = await startFixture({ partitions: 4, leaseTtlMs: 1_500 });
});

afterAll(async () => {
  for (const p of procs) await p.kill();
  await f?.stop();
});

async function appliedTotal(): Promise<number> {
  const ns = await f.redis.hget(`${f.prefix}:ctl`, "ns");
  if (!ns) return 0;
  let n = 0;
  for (const key of (await f.redis.keys(sessionKeysPattern(f.prefix, ns))).filter((k) => k.endsWith(":meta")))
    n += Number(await f.redis.hget(key, "lastSeq")) > 0 ? 1 : 0;
  return n;
}

describe("a store process SIGKILLed mid-stream", () => {
  it("catches up after a restart with no loss and no duplicates", async () => {
    const logs = new Map<string, FleetEvent[]>();
    for (let i = 0; i < 30; i++) {
      const sid = `crash-${i}`;
      logs.set(
        sid,
        syntheticEvents({ sessionId: sid, seed: 900 + i, runs: 30, branchRate: 0.2, labelRate: 0.2, streaming: true }),
      );
    }
    const total = [...logs.values()].reduce((n, evs) => n + evs.length, 0);
    const publisher = new Publisher(f.js, f.partitions);
    const first = await spawnStore(f, { env: { FLEET_WORKER_ID: "crash-a", FLEET_STORE_BATCH: "50" } });
    procs.push(first);
    const publishing = publisher.publishInterleaved([...logs.values()]);
    // Kill once the projection is under way but the log is not fully published.
    await waitFor("the projection to start", async () => (await appliedTotal()) >= 10);
    const published = [...publisher.lastSeq.values()].length;
    await first.kill("SIGKILL");
    expect(first.child.signalCode).toBe("SIGKILL");
    const seqAtKill = Math.max(...publisher.lastSeq.values());
    expect(seqAtKill).toBeLessThan(total);
    expect(published).toBeGreaterThan(0);

    const second = await spawnStore(f, { env: { FLEET_WORKER_ID: "crash-b" } });
    procs.push(second);
    await publishing;
    await waitProjected(f, publisher, 60_000);

    for (const [sid, events] of logs) {
      const stored = await storedTree(f, sid);
      expect(canonicalTree(stored?.tree as never)).toEqual(expectedTree(events));
      expect(stored?.lastSeq).toBe(publisher.lastSeq.get(sid));
      const ns = await f.redis.hget(`${f.prefix}:ctl`, "ns");
      expect(await f.redis.llen(sessionKeys(f.prefix, ns as string, sid).entries)).toBe(
        expectedTree(events).entries.length,
      );
    }
    const verified = await runCli(f, ["verify", "--wait-ms", "5000"]);
    expect(verified.output).toMatch(/verify: 30 sessions through seq \d+, 0 difference\(s\)/);
    expect(verified.code).toBe(0);
  });
});
