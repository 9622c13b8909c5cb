// Redis loses everything (FLUSHALL, or a SIGKILLed redis-server restarted empty) while two store
// processes project a live workload and queries keep coming. Every reply must be `unavailable` or the
// exact fold of the log up to the reply's seq, and the store must heal by itself.
import { type FleetEvent, foldSessionTreeEvents, StoreAppliedNotice, subjects } from "@fleet/protocol";
import { syntheticEvents } from "@fleet/session-store/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  canonicalTree,
  type Fixture,
  Publisher,
  query,
  type StoreProcess,
  spawnStore,
  startFixture,
  waitFor,
  waitProjected,
} from "./support.js";

let f: Fixture;
const procs: StoreProcess[] = [];
const logs = new Map<string, FleetEvent[]>();
let publisher: Publisher;

beforeAll(async () => {
  f = await startFixture({ partitions: 4, leaseTtlMs: 1_500 });
  publisher = new Publisher(f.js, f.partitions);
  for (let i = 0; i < 12; i++) {
    const sid = `heal-${i}`;
    logs.set(sid, syntheticEvents({ sessionId: sid, seed: 900 + i, runs: 40, branchRate: 0.2, labelRate: 0.2 }));
  }
  // A third before the stores start; the rest while Redis is lost.
  await publisher.publishInterleaved([...logs.values()].map((evs) => evs.slice(0, Math.floor(evs.length / 3))));
  procs.push(await spawnStore(f, { env: { FLEET_WORKER_ID: "heal-a" } }));
  procs.push(await spawnStore(f, { env: { FLEET_WORKER_ID: "heal-b" } }));
  await waitProjected(f, publisher);
}, 120_000);

afterAll(async () => {
  for (const p of procs) await p.kill();
  await f?.stop();
});

interface Tally {
  ok: number;
  unavailable: number;
  wrong: string[];
}

/** The fold of a session's log up to stream sequence `seq`, as get_tree shows it. */
function foldUpTo(sid: string, seq: number) {
  const seqs = publisher.seqs.get(sid) ?? [];
  const count = seqs.filter((s) => s <= seq).length;
  const tree = canonicalTree(foldSessionTreeEvents((logs.get(sid) as FleetEvent[]).slice(0, count)));
  return { entries: tree.entries, leafId: tree.leafId, labels: tree.labels };
}

/** Queries every session in turn until `stop()`; every reply is checked against the log. */
function startQuerying() {
  const tally: Tally = { ok: 0, unavailable: 0, wrong: [] };
  let stopped = false;
  const done = (async () => {
    const sids = [...logs.keys()];
    for (let i = 0; !stopped; i++) {
      const sid = sids[i % sids.length] as string;
      const reply = await query(f.nc, "get_tree", { sessionId: sid }, 15_000);
      if (reply.ok) {
        const seq = reply.seq as number;
        // The store can apply an event before this test's publish of it has its ack (and its seq):
        // compare once the publisher knows every event up to the reply's seq.
        for (let w = 0; w < 500 && (publisher.lastSeq.get(sid) ?? 0) < seq; w++) {
          await new Promise((r) => setTimeout(r, 10));
        }
        const got = canonicalTree({
          entries: reply.entries,
          leafId: reply.leafId,
          labels: reply.labels ?? {},
        } as never);
        if (JSON.stringify(got) === JSON.stringify(foldUpTo(sid, seq)) && seq > 0) tally.ok++;
        else tally.wrong.push(`${sid}@${seq}: not the log's fold`);
      } else if (reply.code === "unavailable") tally.unavailable++;
      else tally.wrong.push(`${sid}: ${reply.code} ${String(reply.error)}`);
    }
  })();
  return {
    tally,
    async stop() {
      stopped = true;
      await done;
      return tally;
    },
  };
}

/** Publishes the next `n` events of every session, a few milliseconds apart. */
async function publishMore(n: number) {
  for (let k = 0; k < n; k++) {
    await Promise.all(
      [...logs].map(async ([sid, events]) => {
        const next = events[publisher.seqs.get(sid)?.length ?? 0];
        if (next) await publisher.publish(next);
      }),
    );
    await new Promise((r) => setTimeout(r, 5));
  }
}

const storeLogs = () => procs.map((p) => p.output()).join("");
const healedLines = () =>
  storeLogs()
    .split("\n")
    .filter((l) => l.includes('"evt":"store_healed"'))
    .map((l) => JSON.parse(l) as { level: number; fresh: boolean; msg: string });
const healedCount = () => healedLines().length;

/** Every session's get_tree equals the fold of its whole published log. */
async function expectHealed() {
  await waitFor(
    "every session to equal the log's fold",
    async () => {
      for (const sid of logs.keys()) {
        const reply = await query(f.nc, "get_tree", { sessionId: sid, minSeq: publisher.lastSeq.get(sid) });
        if (!reply.ok) return false;
        const got = canonicalTree({
          entries: reply.entries,
          leafId: reply.leafId,
          labels: reply.labels ?? {},
        } as never);
        expect(got).toEqual(foldUpTo(sid, Number.MAX_SAFE_INTEGER));
      }
      return true;
    },
    60_000,
  );
}

/** Loses Redis's data with `lose` mid-workload, then checks every reply and the unaided heal. */
async function expectHealsAfter(label: string, lose: () => Promise<void>) {
  const healedBefore = healedCount();
  // Views that loaded from the lost indexes are told to load everything again (PROTOCOL change 75).
  const switched: StoreAppliedNotice[] = [];
  const notices = f.nc.subscribe(subjects.storeAppliedAll, {
    callback: (err, msg) => {
      const notice = err ? undefined : StoreAppliedNotice.parse(msg.json());
      if (notice?.all) switched.push(notice);
    },
  });
  const q = startQuerying();
  const writing = publishMore(20);
  await new Promise((r) => setTimeout(r, 200));
  await lose();
  await writing;
  await waitFor("a store to rebuild from the log", async () => healedCount() > healedBefore, 60_000);
  // A namespace seen and then gone is a loss: WARN.
  for (const line of healedLines().slice(healedBefore)) {
    expect(line).toMatchObject({ level: 40, fresh: false, msg: "rebuilt from the log after Redis lost its data" });
  }
  await expectHealed();
  await waitFor("the healed namespace's `all` notice", async () => switched.length > 0, 10_000);
  notices.unsubscribe();
  // One from the worker that applied to the lost namespace, and one more if the group moved meanwhile.
  expect(new Set(switched.map((n) => n.group))).toEqual(new Set([0]));
  const tally = await q.stop();
  expect(tally.wrong).toEqual([]);
  expect(tally.ok).toBeGreaterThan(0);
  // Both processes kept running; neither had to be restarted.
  for (const p of procs) expect(p.child.exitCode).toBeNull();
  process.stdout.write(`${label}: ${tally.ok} full trees, ${tally.unavailable} unavailable\n`);
}

describe("the store heals after Redis loses its data", () => {
  it("a store started on an empty Redis builds its projection and says so at INFO: nothing was lost", async () => {
    await waitFor("the first build", async () => healedCount() > 0, 60_000);
    expect(healedLines()[0]).toMatchObject({
      level: 30,
      fresh: true,
      msg: "built from the log: Redis held no projection at start",
    });
    expect(storeLogs()).not.toContain("after Redis lost its data");
  }, 120_000);

  it("after FLUSHALL mid-workload: replies are unavailable or the log's fold, then it heals unaided", async () => {
    await expectHealsAfter("flushall", async () => {
      await f.redis.flushall();
    });
  }, 120_000);

  it("after a SIGKILLed redis-server restarts empty on the same port: the same", async () => {
    await expectHealsAfter("restart", async () => {
      process.kill(f.redisServer.pid as number, "SIGKILL");
      await f.redisServer.restart();
    });
  }, 120_000);
});
