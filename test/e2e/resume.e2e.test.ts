// events() across a NATS server restart in the middle of a stream of appends: no gap, no duplicate.
import { FleetClient, newId, type SessionEventItem } from "@fleet/client";
import { encodeEvent, STREAMS, subjects } from "@fleet/protocol";
import { applyTopology, connectNats } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const SESSION = "s-resume-e2e";
const TOTAL = 300;

let server: NatsServer;
let writer: NatsConnection;
let client: FleetClient;

beforeAll(async () => {
  server = await startNats();
  writer = await connectNats({ url: server.url, name: "e2e-writer" });
  await applyTopology(writer, { partitions: 8 });
  client = await FleetClient.connect({ natsUrl: server.url });
});

afterAll(async () => {
  await client?.close();
  await writer?.close();
  await server?.stop();
});

/** Appends `custom` events one by one, retrying each (same msgID, same expectation) until stored. */
async function appendAll(partition: number, onStored: (n: number) => void): Promise<number[]> {
  const js = jetstream(writer, { timeout: 1_000 });
  const subject = subjects.event(partition, SESSION);
  const stored: number[] = [];
  let last = 0;
  for (let n = 1; n <= TOTAL; n++) {
    const id = newId();
    const event = {
      type: "custom" as const,
      customType: "tick",
      data: { n },
      entry: { id, parentId: null },
      meta: { v: 1 as const, id, sessionId: SESSION, ts: Date.now(), producer: "e2e-writer" },
    };
    const encoded = encodeEvent(event);
    if (!encoded.ok) throw new Error(encoded.error);
    for (;;) {
      try {
        const ack = await js.publish(subject, encoded.bytes, { msgID: id, expect: { lastSubjectSequence: last } });
        last = ack.seq;
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    stored.push(last);
    onStored(n);
    await new Promise((r) => setTimeout(r, 3));
  }
  return stored;
}

describe("e2e / resume", () => {
  it("events() resumes after the NATS server restarts mid-stream, with no gap and no duplicate", async () => {
    const received: SessionEventItem[] = [];
    const reading = (async () => {
      for await (const item of client.events(SESSION, { from: "start" })) {
        received.push(item);
        if (received.length === TOTAL) break;
      }
    })();
    let restarted: Promise<void> | undefined;
    const writing = appendAll(client.partitionOf(SESSION), (n) => {
      if (n === TOTAL / 3) restarted = server.restart();
    });
    const stored = await writing;
    await restarted;
    await reading;
    expect(received.map((i) => i.seq)).toEqual(stored);
    expect(received.map((i) => (i.event.type === "custom" ? (i.event.data as { n: number }).n : 0))).toEqual(
      Array.from({ length: TOTAL }, (_, i) => i + 1),
    );
    const info = await client.jsm.streams.info(STREAMS.events.name);
    expect(info.state.messages).toBe(TOTAL);
  });
});
