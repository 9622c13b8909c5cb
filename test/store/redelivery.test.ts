import { type FleetEvent, partitionOf, STREAMS, storeGroupConsumer, subjects } from "@fleet/protocol";
import type { StoreService } from "@fleet/session-store";
import {
  createProjector,
  createSessionCache,
  createSessionRepo,
  snapshotSession,
  streamGapReader,
  syntheticEvents,
} from "@fleet/session-store/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  activateNamespaceFromStart,
  canonicalTree,
  expectedTree,
  type Fixture,
  Publisher,
  startFixture,
  startStore,
  storedTree,
  waitFor,
  waitProjected,
} from "./support.js";

let f: Fixture;
let store: StoreService | undefined;
let publisher: Publisher;
const logs = new Map<string, FleetEvent[]>();

const activeNs = async () => (await f.redis.hget(`${f.prefix}:ctl`, "ns")) as string;
const snapshotAll = async (ns: string) => {
  const out: Record<string, unknown> = {};
  for (const sid of logs.keys()) out[sid] = await snapshotSession(f.redis, f.prefix, ns, sid);
  return out;
};

beforeAll(async () => {
  f = await startFixture({ partitions: 2 });
  publisher = new Publisher(f.js, f.partitions);
  for (let i = 0; i < 4; i++) {
    const sid = `dup-${i}`;
    logs.set(sid, syntheticEvents({ sessionId: sid, seed: 40 + i, runs: 12, branchRate: 0.3, labelRate: 0.3 }));
  }
  await publisher.publishInterleaved([...logs.values()]);
  await activateNamespaceFromStart(f.redis, f.prefix);
  store = await startStore(f);
  await waitProjected(f, publisher);
});

afterAll(async () => {
  await store?.stop();
  await f?.stop();
});

describe("redelivered and duplicate events", () => {
  it("treats a redelivery of the whole stream as a no-op", async () => {
    const ns = await activeNs();
    const before = await snapshotAll(ns);
    await store?.stop();
    store = undefined;
    // Force redelivery of everything: drop the durable consumers; the next holder recreates them from startSeq 1.
    await f.jsm.consumers.delete(STREAMS.events.name, storeGroupConsumer(0).durable_name);
    store = await startStore(f, "store-b");
    const total = [...logs.values()].reduce((n, evs) => n + evs.length, 0);
    await waitFor("every event redelivered and acked", async () => {
      const info = await f.jsm.consumers.info(STREAMS.events.name, storeGroupConsumer(0).durable_name);
      if (info.num_pending + info.num_ack_pending > 0) return false;
      return info.delivered.consumer_seq >= total;
    });
    expect(await snapshotAll(ns)).toEqual(before);
  });

  it("applies a batch delivered twice once", async () => {
    const ns = await activeNs();
    const before = await snapshotAll(ns);
    const records = [];
    for (let seq = 1; seq <= 40; seq++) {
      const m = await f.jsm.streams.getMessage(STREAMS.events.name, { seq });
      if (!m) continue;
      records.push({
        seq: m.seq,
        subject: m.subject,
        data: m.data,
        prevSeq: Number(m.header.get("Nats-Expected-Last-Subject-Sequence")),
      });
    }
    const projector = createProjector({
      repo: createSessionRepo(f.redis, f.prefix),
      cache: createSessionCache(10_000),
      partitions: f.partitions,
      readGap: streamGapReader(f.js, f.jsm, f.groups),
    });
    await projector.applyBatch(ns, records);
    await projector.applyBatch(ns, records);
    expect(await snapshotAll(ns)).toEqual(before);
    expect(projector.stats.applied).toBe(0);
  });

  it("ignores an event re-sent with a new stream sequence (same event id), but advances lastSeq", async () => {
    const sid = "dup-0";
    const events = logs.get(sid) as FleetEvent[];
    const entryEvent = events.find((e) => e.type === "message_end") as FleetEvent;
    const leafEvent = events.find((e) => e.type === "leaf");
    // Within the dedup window the same msgID is dropped by JetStream itself.
    const lastBefore = publisher.lastSeq.get(sid) as number;
    const ack = await f.js.publish(subjects.event(partitionOf(sid, f.partitions), sid), JSON.stringify(entryEvent), {
      msgID: entryEvent.meta.id,
    });
    expect(ack.duplicate).toBe(true);
    // After the window (simulated with a fresh msgID) it is stored again and must change nothing.
    await publisher.publish(entryEvent, { msgId: `${entryEvent.meta.id}-again` });
    if (leafEvent) await publisher.publish(leafEvent, { msgId: `${leafEvent.meta.id}-again` });
    await waitProjected(f, publisher);
    const stored = await storedTree(f, sid);
    expect(canonicalTree(stored?.tree as never)).toEqual(expectedTree(events));
    expect(stored?.lastSeq).toBe(publisher.lastSeq.get(sid));
    expect(stored?.lastSeq).toBeGreaterThan(lastBefore);
  });
});
