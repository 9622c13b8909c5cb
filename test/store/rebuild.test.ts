import { type FleetEvent, StoreAppliedNotice, subjects } from "@fleet/protocol";
import type { StoreService } from "@fleet/session-store";
import { indexKeysOf, sessionKeys, syntheticEvents } from "@fleet/session-store/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  canonicalTree,
  expectedTree,
  type Fixture,
  Publisher,
  query,
  runCli,
  startFixture,
  startStore,
  storedTree,
  waitProjected,
} from "./support.js";

let f: Fixture;
let store: StoreService | undefined;
let publisher: Publisher;
const logs = new Map<string, FleetEvent[]>();

const activeNs = async () => (await f.redis.hget(`${f.prefix}:ctl`, "ns")) as string;

async function expectAllProjected() {
  for (const [sid, events] of logs) {
    const published = events.slice(0, publisher.seqs.get(sid)?.length ?? 0);
    const stored = await storedTree(f, sid);
    expect(canonicalTree(stored?.tree as never)).toEqual(expectedTree(published));
    expect(stored?.lastSeq).toBe(publisher.lastSeq.get(sid));
  }
}

beforeAll(async () => {
  f = await startFixture({ partitions: 4 });
  publisher = new Publisher(f.js, f.partitions);
  for (let i = 0; i < 10; i++) {
    const sid = `rb-${i}`;
    logs.set(
      sid,
      syntheticEvents({
        sessionId: sid,
        seed: 300 + i,
        runs: 30,
        branchRate: 0.2,
        compactionRate: 0.1,
        labelRate: 0.3,
      }),
    );
  }
  // The first two thirds now; the rest during the rebuild.
  await publisher.publishInterleaved([...logs.values()].map((evs) => evs.slice(0, Math.floor((evs.length * 2) / 3))));
  store = await startStore(f);
  await waitProjected(f, publisher);
});

afterAll(async () => {
  await store?.stop();
  await f?.stop();
});

describe("rebuild", () => {
  it("replays into a fresh namespace and switches while reads and live projection keep working", async () => {
    const oldNs = await activeNs();
    // The store's notices: after the switch, one per group says that anything may read differently.
    const notices: StoreAppliedNotice[] = [];
    const sub = f.nc.subscribe(subjects.storeAppliedAll, {
      callback: (err, msg) => {
        if (!err) notices.push(StoreAppliedNotice.parse(msg.json()));
      },
    });
    const reads: Array<Record<string, unknown>> = [];
    let reading = true;
    const reader = (async () => {
      while (reading) reads.push(await query(f.nc, "get_tree", { sessionId: "rb-0" }));
    })();
    const rest = [...logs.values()].map((evs) => evs.slice(Math.floor((evs.length * 2) / 3)));
    const [result] = await Promise.all([
      runCli(f, ["rebuild", "--grace-ms", "500"]),
      publisher.publishInterleaved(rest),
    ]);
    reading = false;
    await reader;
    expect(result.code).toBe(0);
    expect(result.output).toMatch(
      /rebuild: namespace n\w+ replaces n\w+; \d+ events through seq \d+ in \d+ ms; \d+ old keys deleted/,
    );
    const ns = await activeNs();
    expect(ns).not.toBe(oldNs);
    expect(await f.redis.keys(`${f.prefix}:${oldNs}:*`)).toEqual([]);
    expect(reads.length).toBeGreaterThan(0);
    for (const r of reads) expect(r.ok).toBe(true);
    await waitProjected(f, publisher);
    await expectAllProjected();
    await expect.poll(() => notices.filter((n) => n.all).length, { timeout: 10_000 }).toBeGreaterThan(0);
    sub.unsubscribe();
    // One names the new namespace's start (the rebuild replayed the log up to there). Another may name
    // the old one's: a group worker started meanwhile if the store's lease moved on this loaded VM.
    const startSeq = Number(await f.redis.hget(`${f.prefix}:ctl`, "startSeq"));
    expect(startSeq).toBeGreaterThan(1);
    expect(notices.filter((n) => n.all)).toContainEqual({
      group: 0,
      seq: startSeq - 1,
      sessions: [],
      approvals: true,
      all: true,
    });
    // Batches were announced before and after it, each naming its sessions.
    expect(notices.filter((n) => !n.all && n.sessions.length > 0).length).toBeGreaterThan(0);
  });

  it("after FLUSHALL, rebuild gives identical trees and verify passes", async () => {
    const before = new Map<string, unknown>();
    for (const sid of logs.keys()) before.set(sid, await query(f.nc, "get_tree", { sessionId: sid }));
    await store?.stop();
    store = undefined;
    await f.redis.flushall();
    const rebuilt = await runCli(f, ["rebuild", "--grace-ms", "0"]);
    expect(rebuilt.code).toBe(0);
    expect(rebuilt.output).toMatch(/replaces \(none\)/);
    await expectAllProjected();
    // A store that starts applying a group announces it: what was announced before it is unknown.
    const started: StoreAppliedNotice[] = [];
    const sub = f.nc.subscribe(subjects.storeAppliedAll, {
      callback: (err, msg) => {
        if (!err) started.push(StoreAppliedNotice.parse(msg.json()));
      },
    });
    store = await startStore(f, "store-after-flush");
    const startSeq = Number(await f.redis.hget(`${f.prefix}:ctl`, "startSeq"));
    await expect
      .poll(() => started.filter((n) => n.all), { timeout: 10_000 })
      .toContainEqual({ group: 0, seq: startSeq - 1, sessions: [], approvals: true, all: true });
    sub.unsubscribe();
    for (const sid of logs.keys()) expect(await query(f.nc, "get_tree", { sessionId: sid })).toEqual(before.get(sid));
    const verified = await runCli(f, ["verify"]);
    expect(verified.output).toMatch(/verify: 10 sessions through seq \d+, 0 difference\(s\)/);
    expect(verified.code).toBe(0);
  });

  it("verify prints every difference and exits non-zero when a key is corrupted", async () => {
    const ns = await activeNs();
    await f.redis.hset(sessionKeys(f.prefix, ns as string, "rb-3").meta, "name", JSON.stringify("tampered"));
    const entries = sessionKeys(f.prefix, ns as string, "rb-5").entries;
    const entry = await f.redis.lindex(entries, 2);
    await f.redis.lset(entries, 2, (entry as string).replace('"timestamp":', '"timestamp":1'));
    await f.redis.zrem(indexKeysOf(f.prefix, ns as string, "rb-7").sessions, "rb-7");
    const verified = await runCli(f, ["verify"]);
    expect(verified.code).toBe(1);
    const diffs = verified.output.split("\n").filter((l) => l.startsWith("DIFF "));
    expect(diffs).toHaveLength(3);
    expect(diffs[0]).toMatch(/^DIFF rb-3: meta\[name\]: live "tampered" != rebuilt /);
    expect(diffs[1]).toMatch(/^DIFF rb-5: entries\[2\]: live .* != rebuilt /);
    expect(diffs[2]).toMatch(/^DIFF rb-7: index score: live \(absent\) != rebuilt \d+$/);
    expect(verified.output).toMatch(/3 difference\(s\)/);
  });
});
