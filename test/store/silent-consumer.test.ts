// A partition's consumer that stops delivering (deleted under the store, or a pull the server dropped)
// is noticed by its missed heartbeats and opened again: the projection catches up without a restart.
import { STREAMS, storeGroupConsumer } from "@fleet/protocol";
import type { StoreService } from "@fleet/session-store";
import { syntheticEvents } from "@fleet/session-store/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Fixture, Publisher, startFixture, startStore, storedTree, waitProjected } from "./support.js";

let f: Fixture;
let store: StoreService | undefined;

beforeAll(async () => {
  f = await startFixture({ partitions: 1 });
});

afterAll(async () => {
  await store?.stop();
  await f?.stop();
});

describe("a partition consumer that goes silent", () => {
  it("is opened again, and events appended meanwhile are projected", async () => {
    const publisher = new Publisher(f.js, f.partitions);
    const events = syntheticEvents({ sessionId: "silent-1", seed: 3, runs: 6 });
    const half = Math.floor(events.length / 2);
    store = await startStore(f);
    for (const e of events.slice(0, half)) await publisher.publish(e);
    await waitProjected(f, publisher);

    // Deleted behind the store's back: its pulls are gone, and nats.js alone keeps asking for a
    // consumer that nobody makes again.
    await f.jsm.consumers.delete(STREAMS.events.name, storeGroupConsumer(0).durable_name);
    for (const e of events.slice(half)) await publisher.publish(e);
    const started = Date.now();
    await waitProjected(f, publisher, 20_000);
    const caughtUpMs = Date.now() - started;
    expect((await storedTree(f, "silent-1"))?.lastSeq).toBe(publisher.lastSeq.get("silent-1"));
    // Two missed heartbeats of a 5 s pull, then a fresh consumer.
    expect(caughtUpMs).toBeLessThan(15_000);
  }, 40_000);
});
