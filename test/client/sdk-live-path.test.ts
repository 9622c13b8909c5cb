// The SDK's live path (decision 0058): commands and watchers create no JetStream consumer, counted
// from the server's consumer-created advisories, and an outcome appended while the client is away
// (a nats-server restart) still reaches the sender.
import { FleetClient, newId, type SessionEventItem } from "@fleet/client";
import { encodeEvent, type FleetEvent, partitionOf, STREAMS, subjects } from "@fleet/protocol";
import { connectNats } from "@fleet/runtime";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeLoop, type FakeLoopServer, startFakeLoopServer } from "./support/fake-loop.js";

const CONSUMER_CREATED = "$JS.EVENT.ADVISORY.CONSUMER.CREATED.>";

let stack: FakeLoopServer;
let loop: FakeLoop;
let client: FleetClient;

beforeAll(async () => {
  stack = await startFakeLoopServer();
  loop = stack.loop;
  client = await FleetClient.connect({ natsUrl: stack.server.url, commandTimeoutMs: 20_000 });
}, 60_000);

afterAll(async () => {
  await client?.close();
  await stack?.stop();
});

/** Counts consumers created on the server (one advisory each) while `work` runs. */
async function consumersCreatedDuring(work: () => Promise<void>): Promise<string[]> {
  const nc = await connectNats({ url: stack.server.url, name: "advisory-counter" });
  const created: string[] = [];
  const sub: Subscription = nc.subscribe(CONSUMER_CREATED, {
    callback: (_err, msg) => {
      created.push((msg.json() as { consumer: string }).consumer);
    },
  });
  try {
    await nc.flush();
    await work();
    // Advisories are published right after the create; a flush round trip lets late ones arrive.
    await new Promise((r) => setTimeout(r, 200));
    await nc.flush();
    return created;
  } finally {
    sub.unsubscribe();
    await nc.close();
  }
}

describe("client / live path", () => {
  it("N commands and a live watcher of their session create no consumer", async () => {
    const sid = `s-live-${newId().slice(-8)}`;
    await client.createSession({}, { sessionId: sid });
    const abort = new AbortController();
    const seen: SessionEventItem[] = [];
    const N = 20;
    const created = await consumersCreatedDuring(async () => {
      const watching = (async () => {
        for await (const item of client.events(sid, { from: "new", signal: abort.signal })) {
          seen.push(item);
          if (seen.length === 2 * N) abort.abort();
        }
      })();
      const outcomes = [];
      for (let n = 0; n < N; n++) {
        outcomes.push(await client.send(sid, { type: "append_custom", customType: "mark", data: { n } }));
      }
      // Concurrent commands to the same session share its one subscription.
      outcomes.push(
        ...(await Promise.all(
          Array.from({ length: N / 2 }, (_, n) =>
            client.send(sid, { type: "append_custom", customType: "mark", data: { n: N + n } }),
          ),
        )),
      );
      const seqs = outcomes.map((o) => o.seq);
      expect(new Set(seqs).size).toBe(seqs.length);
      abort.abort();
      await watching;
    });
    expect(created).toEqual([]);
    // The watcher saw the session's events in order, without gap or duplicate.
    const seqs = seen.map((i) => i.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(seen.length).toBeGreaterThanOrEqual(N);
  }, 60_000);

  it("a history read takes a short range by direct gets and a long one with one ordered read", async () => {
    const sid = `s-history-${newId().slice(-8)}`;
    await client.createSession({}, { sessionId: sid });
    await Promise.all(
      Array.from({ length: 40 }, (_, n) =>
        client.send(sid, { type: "append_custom", customType: "mark", data: { n } }),
      ),
    );
    const last = await client.lastSeq(sid);
    const read = async (fromSeq: number) => {
      const seqs: number[] = [];
      for await (const r of client.history(sid, { fromSeq, toSeq: last })) seqs.push(r.seq);
      return seqs;
    };
    let short: number[] = [];
    expect(
      await consumersCreatedDuring(async () => {
        short = await read(last - 10);
      }),
    ).toEqual([]);
    expect(short.at(-1)).toBe(last);
    let long: number[] = [];
    // The advisories are counted: the long read's one consumer is seen.
    expect(
      await consumersCreatedDuring(async () => {
        long = await read(1);
      }),
    ).toHaveLength(1);
    expect(long).toEqual([...new Set(long)].sort((x, y) => x - y));
    expect(long).toHaveLength(42); // session_created and 41 outcomes
    expect(long.at(-1)).toBe(last);
  }, 60_000);

  it("an outcome appended while the client reconnects after a nats-server restart reaches the sender", async () => {
    const sid = `s-restart-${newId().slice(-8)}`;
    await client.createSession({}, { sessionId: sid });
    const commandId = newId();
    // The fake loop answers no outcome to "say nothing": the test appends it after the restart.
    const sent = client.send(sid, { type: "prompt", text: "say nothing" }, { commandId, timeoutMs: 30_000 });
    sent.catch(() => undefined);
    for (let i = 0; i < 200 && !loop.commands.some((c) => c.id === commandId); i++) {
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(loop.commands.some((c) => c.id === commandId)).toBe(true);
    await stack.server.restart();
    // A fresh connection appends the outcome at once, most likely before the client's reconnect
    // (its core subscription then misses it; the read after the reconnect finds it).
    const nc: NatsConnection = await connectNats({ url: stack.server.url, name: "late-outcome" });
    let appendedSeq = 0;
    try {
      const subject = subjects.event(partitionOf(sid, client.partitions), sid);
      const id = newId();
      const event = {
        type: "command_accepted",
        commandId,
        commandType: "prompt",
        meta: { v: 1, id, sessionId: sid, ts: Date.now(), producer: "test" },
      } as FleetEvent;
      const encoded = encodeEvent(event);
      if (!encoded.ok) throw new Error(encoded.error);
      const js = jetstream(nc);
      for (let attempt = 0; appendedSeq === 0; attempt++) {
        try {
          appendedSeq = (
            await js.publish(subject, encoded.bytes, { msgID: id, expect: { streamName: STREAMS.events.name } })
          ).seq;
        } catch (err) {
          // JetStream may need a moment after the restart.
          if (attempt > 100) throw err;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    } finally {
      await nc.close();
    }
    const outcome = await sent;
    expect(outcome).toMatchObject({ sessionId: sid, commandId, seq: appendedSeq });
  }, 60_000);
});
