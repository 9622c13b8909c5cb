import { STREAMS, storeGroupConsumer } from "@fleet/protocol";
import {
  deleteLegacyPartitionConsumers,
  prepareStoreConsumer,
  storeConsumerDrift,
  syntheticEvents,
} from "@fleet/session-store/testing";
import { AckPolicy, DeliverPolicy } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Fixture, Publisher, startFixture } from "./support.js";

const STREAM = STREAMS.events.name;
const GROUP = { group: 0, groups: 1 };
let f: Fixture;
let seqs: number[];

beforeAll(async () => {
  f = await startFixture({ partitions: 1 });
  const publisher = new Publisher(f.js, f.partitions);
  await publisher.publishInterleaved([syntheticEvents({ sessionId: "drift-1", seed: 7, runs: 2 })]);
  seqs = publisher.seqs.get("drift-1") ?? [];
});

afterAll(async () => {
  await f?.stop();
});

/** `store-g0` as created with other settings: `ack_policy: explicit`. */
async function createExplicitConsumer() {
  await f.jsm.consumers.delete(STREAM, storeGroupConsumer(0).durable_name).catch(() => false);
  await f.jsm.consumers.add(STREAM, {
    ...storeGroupConsumer(0),
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
  });
  return f.js.consumers.get(STREAM, storeGroupConsumer(0).durable_name);
}

async function firstDeliveredSeq() {
  const consumer = await f.js.consumers.get(STREAM, storeGroupConsumer(0).durable_name);
  const m = await consumer.next({ expires: 5_000 });
  return m?.seq;
}

describe("store-g<g> created with other settings", () => {
  it("is recreated with ack_policy all from its ack floor + 1 (nothing pending)", async () => {
    expect(seqs.length).toBeGreaterThan(4);
    const consumer = await createExplicitConsumer();
    for (let i = 0; i < 3; i++) {
      const m = await consumer.next({ expires: 5_000 });
      await m?.ackAck();
    }
    const before = await f.jsm.consumers.info(STREAM, storeGroupConsumer(0).durable_name);
    expect(storeConsumerDrift(0, before.config as unknown as Record<string, unknown>)).toEqual(["ack_policy"]);

    expect(await prepareStoreConsumer(f.jsm, GROUP, { startSeq: 1, reset: false })).toBe("drift");
    const after = await f.jsm.consumers.info(STREAM, storeGroupConsumer(0).durable_name);
    expect(after.config.ack_policy).toBe(AckPolicy.All);
    expect(storeConsumerDrift(0, after.config as unknown as Record<string, unknown>)).toEqual([]);
    expect(await firstDeliveredSeq()).toBe(seqs[3]);
  });

  it("is recreated from its ack floor + 1 when messages were pending", async () => {
    const consumer = await createExplicitConsumer();
    for (let i = 0; i < 4; i++) {
      const m = await consumer.next({ expires: 5_000 });
      if (i < 2) await m?.ackAck();
    }
    expect(await prepareStoreConsumer(f.jsm, GROUP, { startSeq: 1, reset: false })).toBe("takeover");
    expect(await firstDeliveredSeq()).toBe(seqs[2]);
  });

  it("is kept when it matches and nothing is pending", async () => {
    await f.jsm.consumers.delete(STREAM, storeGroupConsumer(0).durable_name);
    expect(await prepareStoreConsumer(f.jsm, GROUP, { startSeq: 1, reset: false })).toBe("created");
    const consumer = await f.js.consumers.get(STREAM, storeGroupConsumer(0).durable_name);
    let last: number | undefined;
    for (let i = 0; i < 3; i++) last = (await consumer.next({ expires: 5_000 }))?.seq;
    // ack_policy all: acking the third message acknowledges the first two as well.
    const info0 = await f.jsm.consumers.info(STREAM, storeGroupConsumer(0).durable_name);
    expect(info0.num_ack_pending).toBe(3);
    const m = await consumer.next({ expires: 5_000 });
    await m?.ackAck();
    const info = await f.jsm.consumers.info(STREAM, storeGroupConsumer(0).durable_name);
    expect(info.num_ack_pending).toBe(0);
    expect(last).toBe(seqs[2]);
    expect(await prepareStoreConsumer(f.jsm, GROUP, { startSeq: 1, reset: false })).toBe("kept");
  });

  it("is recreated without a filter when one was set (a filter makes the server match every event)", async () => {
    await f.jsm.consumers.delete(STREAM, storeGroupConsumer(0).durable_name).catch(() => false);
    await f.jsm.consumers.add(STREAM, { ...storeGroupConsumer(0), filter_subject: "fleet.evt.0.*" } as never);
    const before = await f.jsm.consumers.info(STREAM, storeGroupConsumer(0).durable_name);
    expect(storeConsumerDrift(0, before.config as unknown as Record<string, unknown>)).toEqual(["filter_subject"]);
    expect(await prepareStoreConsumer(f.jsm, GROUP, { startSeq: 1, reset: false })).toBe("drift");
    const after = await f.jsm.consumers.info(STREAM, storeGroupConsumer(0).durable_name);
    expect(after.config.filter_subject ?? "").toBe("");
  });
});

describe("store-p<p> of a store from before stream groups", () => {
  it("is deleted by name; one that does not exist is skipped", async () => {
    await f.jsm.consumers.add(STREAM, {
      durable_name: "store-p0",
      filter_subject: "fleet.evt.0.*",
      ack_policy: AckPolicy.All,
    });
    expect(await deleteLegacyPartitionConsumers(f.jsm, STREAM, [0, 1, 2])).toBe(1);
    await expect(f.jsm.consumers.info(STREAM, "store-p0")).rejects.toThrow(/consumer not found/);
    expect(await deleteLegacyPartitionConsumers(f.jsm, STREAM, [0])).toBe(0);
  });
});
