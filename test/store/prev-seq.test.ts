import { STREAMS, subjects } from "@fleet/protocol";
import { DeliverPolicy } from "@nats-io/jetstream";
import { headers } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prevSeqOf, toEventRecord } from "../../services/session-store/src/partition-worker.js";
import { syntheticEvents } from "../../services/session-store/src/testing/synthetic-session.js";
import { type Fixture, Publisher, startFixture } from "./support.js";

let f: Fixture;

beforeAll(async () => {
  f = await startFixture({ partitions: 1 });
});

afterAll(async () => {
  await f?.stop();
});

async function readAll(count: number) {
  const consumer = await f.js.consumers.get(STREAMS.events.name, {
    filter_subjects: subjects.eventsAll,
    deliver_policy: DeliverPolicy.All,
  });
  const out = [];
  for (let i = 0; i < count; i++) {
    const m = await consumer.next({ expires: 5_000 });
    if (m) out.push(m);
  }
  return out;
}

describe("prevSeqOf", () => {
  it("reads Nats-Expected-Last-Subject-Sequence as the decoded headers do, and undefined without it", async () => {
    const publisher = new Publisher(f.js, f.partitions);
    const events = syntheticEvents({ sessionId: "prev-1", seed: 3, runs: 2 }).slice(0, 5);
    for (const e of events) await publisher.publish(e);
    // One event appended without the expectation, and one with other headers only.
    await f.js.publish(subjects.event(0, "prev-2"), JSON.stringify(events[0]), { msgID: "no-expect" });
    const h = headers();
    h.set("X-Other", "1");
    await f.js.publish(subjects.event(0, "prev-3"), JSON.stringify(events[0]), { headers: h });

    const msgs = await readAll(7);
    // nats.js keeps the raw header block where the fast path reads it.
    const inner = (msgs[0] as unknown as { msg: { _rdata: unknown; _msg: { hdr: unknown } } }).msg;
    expect(inner._rdata).toBeInstanceOf(Uint8Array);
    expect(typeof inner._msg.hdr).toBe("number");
    expect(msgs.map((m) => prevSeqOf(m))).toEqual([0, 1, 2, 3, 4, undefined, undefined]);
    for (const m of msgs.slice(0, 5)) {
      expect(prevSeqOf(m)).toBe(Number(m.headers?.get("Nats-Expected-Last-Subject-Sequence")));
    }
    expect(toEventRecord(msgs[2] as (typeof msgs)[number])).toEqual({
      seq: 3,
      subject: subjects.event(0, "prev-1"),
      data: (msgs[2] as (typeof msgs)[number]).data,
      prevSeq: 2,
    });
  });
});
