import { type FleetEvent, STREAMS } from "@fleet/protocol";
import {
  createNamespaceControl,
  createProjector,
  createSessionCache,
  createSessionRepo,
  type EventRecord,
  newNamespaceId,
  streamGapReader,
  syntheticEvents,
} from "@fleet/session-store/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { canonicalTree, expectedTree, type Fixture, Publisher, startFixture, storedTree } from "./support.js";

let f: Fixture;
let publisher: Publisher;
let ns: string;
const logs = new Map<string, FleetEvent[]>();

async function recordsOf(sid: string): Promise<EventRecord[]> {
  const out: EventRecord[] = [];
  for (const seq of publisher.seqs.get(sid) ?? []) {
    const m = await f.jsm.streams.getMessage(STREAMS.events.name, { seq });
    if (!m) throw new Error(`no message ${seq}`);
    const prev = m.header.get("Nats-Expected-Last-Subject-Sequence");
    out.push({ seq: m.seq, subject: m.subject, data: m.data, prevSeq: prev ? Number(prev) : undefined });
  }
  return out;
}

const projector = () =>
  createProjector({
    repo: createSessionRepo(f.redis, f.prefix),
    cache: createSessionCache(100_000),
    partitions: f.partitions,
    readGap: streamGapReader(f.js, f.jsm, f.groups),
  });

beforeAll(async () => {
  f = await startFixture();
  publisher = new Publisher(f.js, f.partitions);
  for (const sid of ["g-1", "g-2", "g-3"]) {
    logs.set(
      sid,
      syntheticEvents({ sessionId: sid, seed: sid.length * 31 + Number(sid.slice(2)), runs: 10, branchRate: 0.3 }),
    );
  }
  await publisher.publishInterleaved([...logs.values()]);
  ns = newNamespaceId();
  const control = createNamespaceControl(f.redis, f.prefix);
  await control.markBorn(ns);
  await control.switchTo(ns, 1);
});

afterAll(async () => {
  await f?.stop();
});

describe("per-session sequence guard", () => {
  it("fills a gap from the stream when a batch skips events of a session (split delivery)", async () => {
    const records = await recordsOf("g-1");
    const p = projector();
    await p.applyBatch(ns, records.slice(0, 5));
    // Events 5..9 went to another consumer that never wrote them; this one sees the rest.
    await p.applyBatch(ns, records.slice(10));
    expect(p.stats.gapRepairs).toBe(1);
    const stored = await storedTree(f, "g-1");
    expect(canonicalTree(stored?.tree as never)).toEqual(expectedTree(logs.get("g-1") as FleetEvent[]));
    expect(stored?.lastSeq).toBe(publisher.lastSeq.get("g-1"));
  });

  it("refolds from Redis when another writer moved the session (stale cache, lastSeq compare-and-set)", async () => {
    const records = await recordsOf("g-2");
    const a = projector();
    const b = projector();
    await a.applyBatch(ns, records.slice(0, 5));
    await b.applyBatch(ns, records.slice(0, 12));
    await a.applyBatch(ns, records.slice(5));
    expect(a.stats.staleRetries).toBe(1);
    const stored = await storedTree(f, "g-2");
    expect(canonicalTree(stored?.tree as never)).toEqual(expectedTree(logs.get("g-2") as FleetEvent[]));
    expect(stored?.lastSeq).toBe(publisher.lastSeq.get("g-2"));
  });

  it("applies an undecodable or foreign event as a no-op that advances lastSeq", async () => {
    const records = await recordsOf("g-3");
    const invalid: string[] = [];
    const p = createProjector({
      repo: createSessionRepo(f.redis, f.prefix),
      cache: createSessionCache(100_000),
      partitions: f.partitions,
      readGap: streamGapReader(f.js, f.jsm, f.groups),
      onInvalid: (r, error) => invalid.push(`${r.seq}: ${error}`),
    });
    const last = records.at(-1) as EventRecord;
    const broken: EventRecord = {
      ...last,
      seq: last.seq + 1000,
      prevSeq: last.seq,
      data: new TextEncoder().encode("{nope"),
    };
    const otherPartition: EventRecord = {
      ...last,
      seq: last.seq + 1001,
      subject: `fleet.evt.99.g-3`,
      prevSeq: undefined,
    };
    await p.applyBatch(ns, [...records, broken, otherPartition]);
    expect(invalid).toEqual([
      `${broken.seq}: not JSON: ${invalidJsonMessage("{nope")}`,
      `${otherPartition.seq}: not an event subject: fleet.evt.99.g-3`,
    ]);
    const stored = await storedTree(f, "g-3");
    expect(canonicalTree(stored?.tree as never)).toEqual(expectedTree(logs.get("g-3") as FleetEvent[]));
    expect(stored?.lastSeq).toBe(broken.seq);
  });
});

function invalidJsonMessage(text: string): string {
  try {
    JSON.parse(text);
    return "";
  } catch (err) {
    return (err as Error).message;
  }
}
