// Reading a child's log on a real nats-server: by walking back from its last event (gets by
// sequence, which 2.9 serves from its index), and forward by `next_by_subj` (which 2.9 serves by
// scanning the stream) only when a stored event has no fence to walk by.
import { encodeEvent, type FleetEvent, partitionOf, subjects } from "@fleet/protocol";
import { applyTopology, connectNats, createStreamPublisher, type StreamPublisher } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scanChildLog } from "./child-log.js";

const topology = { partitions: 4, groups: 1 };
let server: NatsServer;
let nc: NatsConnection;
let spy: NatsConnection;
let jsm: JetStreamManager;
let publisher: StreamPublisher;
/** Every direct get request the server received since the last `reset`. */
let gets: Array<Record<string, unknown>> = [];
const lastSeq = new Map<string, number>();

beforeAll(async () => {
  server = await startNats();
  nc = await connectNats({ url: server.url, name: "child-log-test" });
  spy = await connectNats({ url: server.url, name: "child-log-spy" });
  jsm = (await applyTopology(nc, { partitions: topology.partitions })).jsm;
  publisher = createStreamPublisher(nc);
  spy.subscribe("$JS.API.DIRECT.GET.>", {
    callback: (_err, msg) => {
      gets.push(msg.data.length > 0 ? (msg.json() as Record<string, unknown>) : {});
    },
  });
  await spy.flush();
});
afterAll(async () => {
  await spy?.close();
  await nc?.close();
  await server?.stop();
});

const event = (sessionId: string, n: number): FleetEvent =>
  ({
    type: "turn_start",
    meta: { v: 1, id: `${sessionId}-${n}`, sessionId, ts: 1_000 + n, producer: "t" },
  }) as FleetEvent;

/** Appends event n of `sessionId`, fenced on the session's last sequence unless `unfenced`. */
async function append(sessionId: string, n: number, unfenced = false): Promise<number> {
  const encoded = encodeEvent(event(sessionId, n));
  if (!encoded.ok) throw new Error(encoded.error);
  const subject = subjects.event(partitionOf(sessionId, topology.partitions), sessionId);
  const ack = await publisher.publish(
    subject,
    encoded.bytes,
    unfenced ? {} : { expectLastSubjectSequence: lastSeq.get(sessionId) ?? 0 },
  );
  if (!ack.ok) throw new Error(ack.error);
  lastSeq.set(sessionId, ack.seq);
  return ack.seq;
}

/** The child's events interleaved with `others` events of other sessions after each. */
async function log(childId: string, events: number, others: number, unfencedAt = -1): Promise<number[]> {
  const seqs: number[] = [];
  for (let n = 1; n <= events; n++) {
    seqs.push(await append(childId, n, n === unfencedAt));
    for (let k = 0; k < others; k++) await append(`other-${k}`, n);
  }
  return seqs;
}

async function scan(childId: string, maxEvents: number, range: { from?: number; until?: number } = {}) {
  await spy.flush();
  gets = [];
  const seen: number[] = [];
  await scanChildLog(jsm, topology, childId, maxEvents, (_e, seq) => void seen.push(seq), range);
  await nc.flush();
  await spy.flush();
  return {
    seen,
    nextBySubject: gets.filter((g) => "next_by_subj" in g).length,
    bySeq: gets.filter((g) => "seq" in g && !("next_by_subj" in g)).length,
  };
}

describe("scanChildLog on a real nats-server", () => {
  it("walks back from the child's last event: every event once, in order, no get by next_by_subj", async () => {
    const seqs = await log("child-a", 40, 3);
    const all = await scan("child-a", 1_000);
    expect(all.seen).toEqual(seqs);
    expect(all.nextBySubject).toBe(0);
    expect(all.bySeq).toBe(39);

    const window = await scan("child-a", 5, { from: seqs[10], until: seqs[30] });
    expect(window.seen).toEqual(seqs.slice(10, 15));
    expect(window.nextBySubject).toBe(0);
    const tail = await scan("child-a", 1_000, { from: seqs[35] });
    expect(tail.seen).toEqual(seqs.slice(35));
    expect((await scan("child-a", 1_000, { from: (seqs.at(-1) as number) + 1 })).seen).toEqual([]);
  });

  it("stops at the first answer visit gives", async () => {
    const seqs = await log("child-b", 10, 2);
    const answer = await scanChildLog(jsm, topology, "child-b", 100, (e, seq) =>
      e.meta.id === "child-b-3" ? seq : undefined,
    );
    expect(answer).toBe(seqs[2]);
  });

  it("reads forward by next_by_subj when an event has no fence to walk by, with the same events", async () => {
    const seqs = await log("child-c", 12, 2, 6);
    const all = await scan("child-c", 1_000);
    expect(all.seen).toEqual(seqs);
    expect(all.nextBySubject).toBeGreaterThanOrEqual(12);
    expect((await scan("child-c", 4)).seen).toEqual(seqs.slice(0, 4));
  });

  it("an empty log gives nothing", async () => {
    expect((await scan("child-none", 10)).seen).toEqual([]);
  });
});
