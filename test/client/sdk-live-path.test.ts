// The SDK's live path (decisions 0058, 0067): commands and watchers create no JetStream consumer,
// counted from the server's consumer-created advisories; on a stream that republishes, a watcher
// reads no event by direct get (counted from the requests themselves); a stream made before change
// 67 (no republish) keeps working by doorbells; and an outcome appended while the client is away (a
// nats-server restart) still reaches the sender.
import { FleetClient, newId, type SessionEventItem } from "@fleet/client";
import { encodeEvent, type FleetEvent, partitionOf, STREAMS, subjects } from "@fleet/protocol";
import { connectNats } from "@fleet/runtime";
import { jetstream } from "@nats-io/jetstream";
import { type Msg, type NatsConnection, headers as natsHeaders, type Subscription } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeLoop, type FakeLoopServer, startFakeLoopServer } from "./support/fake-loop.js";

const CONSUMER_CREATED = "$JS.EVENT.ADVISORY.CONSUMER.CREATED.>";
const DIRECT_GETS = "$JS.API.DIRECT.GET.>";

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
function consumersCreatedDuring(work: () => Promise<void>): Promise<string[]> {
  return heardDuring(stack, CONSUMER_CREATED, (msg) => (msg.json() as { consumer: string }).consumer, work);
}

/** What a core subscriber of `subject` on `on`'s server hears while `work` runs, mapped by `item`. */
async function heardDuring<T>(
  on: FakeLoopServer,
  subject: string,
  item: (msg: Msg) => T,
  work: () => Promise<void>,
): Promise<T[]> {
  const nc = await connectNats({ url: on.server.url, name: "counter" });
  const created: T[] = [];
  const sub: Subscription = nc.subscribe(subject, {
    callback: (_err, msg) => {
      created.push(item(msg));
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

/**
 * Appends a `command_accepted` of `commandId` to the session, as the loop would (fenced on `after`,
 * the session's last sequence, when given); returns its sequence.
 */
async function appendAccepted(nc: NatsConnection, sid: string, commandId = newId(), after?: number): Promise<number> {
  const id = newId();
  const event = {
    type: "command_accepted",
    commandId,
    commandType: "prompt",
    meta: { v: 1, id, sessionId: sid, ts: Date.now(), producer: "test" },
  } as FleetEvent;
  const encoded = encodeEvent(event);
  if (!encoded.ok) throw new Error(encoded.error);
  const subject = subjects.event(partitionOf(sid, client.partitions), sid);
  const ack = await jetstream(nc).publish(subject, encoded.bytes, {
    msgID: id,
    expect: { streamName: STREAMS.events.name, ...(after === undefined ? {} : { lastSubjectSequence: after }) },
  });
  return ack.seq;
}

/**
 * Creates the session and returns once its `session_created` is stored (the fake loop appends it
 * after the outcome `createSession` waits for), so a watcher started afterwards from "new" sees
 * only what the test appends.
 */
async function createdSession(on: FleetClient, sid: string): Promise<void> {
  await on.createSession({}, { sessionId: sid });
  const abort = new AbortController();
  for await (const item of on.events(sid, { from: "start", signal: abort.signal })) {
    if (item.event.type === "session_created") abort.abort();
  }
}

/**
 * Watches `sid` from its end on `watcher` while `count` events are appended to it one at a time,
 * once the watcher's start reads (at its start, 100 ms and 1 s after) are over. Returns the
 * appended and the watched sequences, and the direct gets the server was sent meanwhile.
 */
async function watchAppends(on: FakeLoopServer, watcher: FleetClient, sid: string, count: number) {
  const abort = new AbortController();
  const watched: number[] = [];
  let all: () => void = () => undefined;
  const allSeen = new Promise<void>((resolve) => (all = resolve));
  const watching = (async () => {
    for await (const item of watcher.events(sid, { from: "new", signal: abort.signal })) {
      watched.push(item.seq);
      if (watched.length === count) all();
    }
  })();
  await new Promise((r) => setTimeout(r, 1_300));
  const nc = await connectNats({ url: on.server.url, name: "appender" });
  const appended: number[] = [];
  try {
    const gets = await heardDuring(
      on,
      DIRECT_GETS,
      // A get's kind: `next_by_subj`, `seq` or `last_by_subj` (in the subject, with no body).
      (msg) => (msg.data.length === 0 ? "last_by_subj" : "next_by_subj" in msg.json<object>() ? "next_by_subj" : "seq"),
      async () => {
        let last = await watcher.lastSeq(sid);
        for (let n = 0; n < count; n++) {
          last = await appendAccepted(nc, sid, newId(), last);
          appended.push(last);
        }
        await allSeen;
      },
    );
    return { appended, watched, gets };
  } finally {
    abort.abort();
    await watching;
    await nc.close();
  }
}

describe("client / live path", () => {
  it("on a stream that republishes, a watcher gets each event from the live path, with no direct get", async () => {
    expect(stack.drift).toEqual([]);
    const sid = `s-rp-${newId().slice(-8)}`;
    await createdSession(client, sid);
    const { appended, watched, gets } = await watchAppends(stack, client, sid, 30);
    expect(watched).toEqual(appended);
    expect(gets).toEqual([]);
  }, 60_000);

  it("a stream made before change 67 (no republish) keeps the live path by doorbells and direct gets", async () => {
    const old = await startFakeLoopServer({ republish: false });
    const oldClient = await FleetClient.connect({ natsUrl: old.server.url, commandTimeoutMs: 20_000 });
    try {
      expect(old.drift).toEqual([
        "stream FLEET_EVENTS: made without republish to fleet.live.> (before change 67; fixed at creation): live readers use direct gets",
      ]);
      const sid = `s-old-${newId().slice(-8)}`;
      await createdSession(oldClient, sid);
      const outcome = await oldClient.send(sid, { type: "append_custom", customType: "mark", data: {} });
      expect(outcome.seq).toBeGreaterThan(0);
      const { appended, watched, gets } = await watchAppends(old, oldClient, sid, 10);
      expect(watched).toEqual(appended);
      // Each event is read by direct get after its doorbell (retried while not stored yet): the
      // subject's last message, and its predecessors by sequence, never a scanning `next_by_subj`.
      expect(gets.length).toBeGreaterThanOrEqual(10);
      expect(gets.filter((kind) => kind === "next_by_subj")).toEqual([]);
    } finally {
      await oldClient.close();
      await old.stop();
    }
  }, 60_000);

  it("a live copy that shows a message was not heard makes the watcher read the stream; none twice", async () => {
    const sid = `s-gap-${newId().slice(-8)}`;
    await createdSession(client, sid);
    const abort = new AbortController();
    const watched: number[] = [];
    const watching = (async () => {
      for await (const item of client.events(sid, { from: "new", signal: abort.signal })) watched.push(item.seq);
    })();
    const nc = await connectNats({ url: stack.server.url, name: "gap" });
    try {
      await new Promise((r) => setTimeout(r, 1_300));
      const first = await appendAccepted(nc, sid);
      // A copy claiming sequences the stream does not hold (as one whose gap was purged): the
      // watcher reads the stream behind it, finds nothing, and after a while drops the copy.
      const headers = natsHeaders();
      headers.set("Nats-Sequence", String(first + 1_000));
      headers.set("Nats-Last-Sequence", String(first + 999));
      headers.set("Nats-Subject", subjects.event(partitionOf(sid, client.partitions), sid));
      nc.publish(subjects.live(partitionOf(sid, client.partitions), sid), new Uint8Array(), { headers });
      await nc.flush();
      const second = await appendAccepted(nc, sid);
      const deadline = Date.now() + 10_000;
      while (watched.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const third = await appendAccepted(nc, sid);
      while (watched.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      await new Promise((r) => setTimeout(r, 300));
      expect(watched).toEqual([first, second, third]);
    } finally {
      abort.abort();
      await watching;
      await nc.close();
    }
  }, 60_000);

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
      for (let attempt = 0; appendedSeq === 0; attempt++) {
        try {
          appendedSeq = await appendAccepted(nc, sid, commandId);
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
