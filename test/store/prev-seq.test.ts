import { STREAMS, subjects } from "@fleet/protocol";
import {
  ackReplyOf,
  pendingOf,
  prevSeqOf,
  streamSeqOf,
  syntheticEvents,
  toEventRecord,
} from "@fleet/session-store/testing";
import { DeliverPolicy } from "@nats-io/jetstream";
import { headers } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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

  it("streamSeqOf reads the stream sequence from either reply-subject layout, as m.seq does", async () => {
    const msgs = await readAll(7);
    expect(msgs.map((m) => streamSeqOf(m))).toEqual(msgs.map((m) => m.seq));
    const withReply = (reply: string) => ({ reply, seq: -1 }) as unknown as (typeof msgs)[number];
    expect(streamSeqOf(withReply("$JS.ACK.FLEET_EVENTS.store-p0.1.4821.4821.1764450000000000000.0"))).toBe(4821);
    expect(streamSeqOf(withReply("$JS.ACK.hub.ACCHASH.FLEET_EVENTS.store-p0.2.77.70.1764450000000000000.3.rnd"))).toBe(
      77,
    );
    expect(msgs.map((m) => pendingOf(m))).toEqual(msgs.map((m) => m.info.pending));
    expect(msgs.map((m) => ackReplyOf((m as unknown as { reply: string }).reply)?.seq)).toEqual(msgs.map((m) => m.seq));
    expect(ackReplyOf("$JS.ACK.FLEET_EVENTS.store-p0.1.4821.4821.1764450000000000000.17")).toEqual({
      seq: 4821,
      pending: 17,
    });
    expect(ackReplyOf("$JS.ACK.S.C.1.2.3.4")).toBeNull();
    // Anything else falls back to the client's own parsing.
    expect(streamSeqOf(withReply("_INBOX.abc"))).toBe(-1);
    expect(streamSeqOf(withReply("$JS.ACK.S.C.1.x.1.1.0"))).toBe(-1);
  });
});
