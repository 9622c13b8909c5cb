// The SDK's change feed (`FleetClient.changes()`, PROTOCOL "Change feed"): the same frames as the
// gateway's `GET /v1/changes`, for a service that keeps a view of the indexes without a gateway.
// Real nats-server, session store on Redis and loop worker.
import { type ChangeBatch, FleetClient, isFleetError } from "@fleet/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayStack, startGatewayStack } from "../gateway/support.js";

let stack: GatewayStack;
let client: FleetClient;

beforeAll(async () => {
  stack = await startGatewayStack();
  client = await FleetClient.connect({ natsUrl: stack.nats.url, commandTimeoutMs: 20_000 });
}, 60_000);
afterAll(async () => {
  await client?.close();
  await stack?.stop();
});

/** Frames of `iterator` until one satisfies `done` (an `all` frame never does: the store may send one when its lease moves). */
async function framesUntil(
  iterator: AsyncIterator<ChangeBatch>,
  done: (b: ChangeBatch) => boolean,
): Promise<ChangeBatch[]> {
  const seen: ChangeBatch[] = [];
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const next = await iterator.next();
    if (next.done) break;
    seen.push(next.value);
    if (done(next.value)) return seen;
  }
  throw new Error(`no such frame: ${JSON.stringify(seen)}`);
}

describe("client / change feed", () => {
  it("names a session once the store's indexes hold its change: a list read after the frame finds it", async () => {
    const created = await client.createSession({}, { sessionId: "s-chg-1" });
    const ac = new AbortController();
    const iterator = client.changes({ signal: ac.signal })[Symbol.asyncIterator]();
    const first = iterator.next(); // joins the feed before the change is sent
    await client.setName(created.sessionId, "Named for the feed");
    const frames = [(await first).value as ChangeBatch];
    if (!frames[0]?.sessions.includes("s-chg-1")) {
      frames.push(...(await framesUntil(iterator, (b) => b.sessions.includes("s-chg-1"))));
    }
    const listed = await client.listSessions({ limit: 100 });
    expect(listed.sessions.find((s) => s.sessionId === "s-chg-1")?.name).toBe("Named for the feed");
    ac.abort();
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
  });

  it("a reader that falls behind gets what it missed in one frame", async () => {
    const ac = new AbortController();
    const iterator = client.changes({ signal: ac.signal, windowMs: 50 })[Symbol.asyncIterator]();
    const first = iterator.next();
    await client.createSession({}, { sessionId: "s-chg-2" });
    await first;
    // Not reading for many windows while three sessions change.
    await client.createSession({}, { sessionId: "s-chg-3" });
    await client.createSession({}, { sessionId: "s-chg-4" });
    await client.setName("s-chg-2", "Later");
    await new Promise((r) => setTimeout(r, 1_000));
    const merged = await iterator.next();
    ac.abort();
    const batch = merged.value as ChangeBatch;
    if (!batch.all) expect(batch.sessions).toEqual(expect.arrayContaining(["s-chg-2", "s-chg-3", "s-chg-4"]));
    // Nothing else waits: the one frame held everything.
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
  });

  it("iterators share the feed, and each ends on its own signal", async () => {
    const one = new AbortController();
    const two = new AbortController();
    const a = client.changes({ signal: one.signal })[Symbol.asyncIterator]();
    const b = client.changes({ signal: two.signal })[Symbol.asyncIterator]();
    const [nextA, nextB] = [a.next(), b.next()];
    await client.createSession({}, { sessionId: "s-chg-5" });
    const [fa, fb] = await Promise.all([nextA, nextB]);
    expect(fa.value).toEqual(fb.value);
    one.abort();
    expect(await a.next()).toEqual({ done: true, value: undefined });
    const stillB = b.next();
    await client.setName("s-chg-5", "Only b hears this");
    expect((await stillB).done).toBe(false);
    two.abort();
  });

  it("ends when its client closes, and a closed client's feed ends at once", async () => {
    const other = await FleetClient.connect({ natsUrl: stack.nats.url });
    const iterator = other.changes()[Symbol.asyncIterator]();
    const pending = iterator.next();
    await other.close();
    expect(await pending).toEqual({ done: true, value: undefined });
    expect(await other.changes()[Symbol.asyncIterator]().next()).toEqual({ done: true, value: undefined });
  });

  it("refuses a window that is not a whole number of ms from 1 to 60,000", () => {
    for (const windowMs of [0, -5, 1.5, 60_001, Number.NaN]) {
      let thrown: unknown;
      try {
        client.changes({ windowMs });
      } catch (err) {
        thrown = err;
      }
      expect(isFleetError(thrown) && thrown.kind === "invalid_input", `windowMs ${windowMs}`).toBe(true);
    }
  });
});
