import { PartitionDayTotal, SPEND_KEYS, type Spend, TenantSpendRecord } from "@fleet/protocol";
import { applyTopology, connectNats, createStreamPublisher } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSpendCounter, type SpendCounter } from "./spend-counter.js";

let server: NatsServer;
let ncA: NatsConnection;
let ncB: NatsConnection;
let counterA: SpendCounter;
let counterB: SpendCounter;

beforeAll(async () => {
  server = await startNats();
  ncA = await connectNats({ url: server.url, name: "spend-counter-a" });
  ncB = await connectNats({ url: server.url, name: "spend-counter-b" });
  // Two workers: each its own connection, topology and counter.
  const a = await applyTopology(ncA, { partitions: 4 });
  const b = await applyTopology(ncB, { partitions: 4 });
  const buckets = (t: typeof a, nc: NatsConnection) => ({
    totals: t.kv.spendTotals,
    records: t.kv.spend,
    publisher: createStreamPublisher(nc),
  });
  counterA = createSpendCounter(buckets(a, ncA), a.jsm, { retryMs: 20 });
  counterB = createSpendCounter(buckets(b, ncB), b.jsm, { retryMs: 20 });
});
afterAll(async () => {
  await ncA?.close();
  await ncB?.close();
  await server?.stop();
});

const spend = (outputTokens: number): Spend => ({
  inputTokens: outputTokens * 2,
  outputTokens,
  totalTokens: outputTokens * 3,
  costUsd: outputTokens / 1024,
});
const read = async <T>(key: string, schema: { parse(v: unknown): T }): Promise<T | undefined> => {
  const kv = await new Kvm(ncA).open(key.startsWith("total.") ? "fleet_spend_totals" : "fleet_spend");
  const entry = await kv.get(key);
  return entry?.operation === "PUT" ? schema.parse(entry.json()) : undefined;
};

describe("spend counter / one partition's day total on a real nats-server", () => {
  it("two workers counting at once into one total lose no increment and count a shared fold once", async () => {
    const day = "2026-01-10";
    const sessions = 25;
    const steps = 4;
    // Each session spends 10 output tokens per step; its owner counts its fold after every step.
    const run = (counter: SpendCounter, prefix: string) =>
      Array.from({ length: sessions }, async (_, i) => {
        for (let step = 1; step <= steps; step++) {
          await counter.count(day, 1, {
            sessionId: `${prefix}-${i}`,
            events: step * 5,
            spend: spend(step * 10),
            mode: "count",
          });
        }
      });
    // Sessions `c-*` are counted by both (an owner and the one it was deposed by) with the same folds.
    await Promise.all([...run(counterA, "a"), ...run(counterB, "b"), ...run(counterA, "c"), ...run(counterB, "c")]);

    const total = await read(SPEND_KEYS.total(day, 1), PartitionDayTotal);
    const expected = 3 * sessions * steps * 10;
    expect(total).toMatchObject({ day, partition: 1, outputTokens: expected, inputTokens: 2 * expected });
    expect(total?.costUsd).toBeCloseTo(expected / 1024, 9);
    expect(total?.pending).toEqual([]);
    for (const sid of ["a-0", "b-24", "c-7"]) {
      expect(await read(SPEND_KEYS.session(day, sid), TenantSpendRecord)).toMatchObject({
        sessionId: sid,
        events: steps * 5,
        outputTokens: steps * 10,
      });
    }
  });

  it("a worker that died between the total and the record: the next one counts nothing twice", async () => {
    const day = "2026-01-11";
    const kv = await new Kvm(ncA).open("fleet_spend");
    const totals = await new Kvm(ncA).open("fleet_spend_totals");
    // What a worker leaves when it dies right after its update of the total: the session's count
    // (9 events, 80 tokens) pending in the total, its record still at 5 events.
    await kv.put(SPEND_KEYS.session(day, "s-1"), JSON.stringify({ sessionId: "s-1", day, events: 5, ...spend(50) }));
    await totals.put(
      SPEND_KEYS.total(day, 2),
      JSON.stringify({ day, partition: 2, ...spend(300), pending: [{ sessionId: "s-1", events: 9, ...spend(80) }] }),
    );
    // The new owner loads the same log (9 events) and counts it.
    await counterB.count(day, 2, { sessionId: "s-1", events: 9, spend: spend(80), mode: "count" });
    expect(await read(SPEND_KEYS.total(day, 2), PartitionDayTotal)).toMatchObject({ outputTokens: 300, pending: [] });
    expect(await read(SPEND_KEYS.session(day, "s-1"), TenantSpendRecord)).toMatchObject({
      events: 9,
      outputTokens: 80,
    });
    // Its next message adds only its own spend.
    await counterB.count(day, 2, { sessionId: "s-1", events: 12, spend: spend(95), mode: "count" });
    expect(await read(SPEND_KEYS.total(day, 2), PartitionDayTotal)).toMatchObject({ outputTokens: 315, pending: [] });
  });

  it("removes a session's records without a trace, and its total keeps the spend", async () => {
    const day = "2026-01-12";
    await counterA.count(day, 3, { sessionId: "gone", events: 4, spend: spend(40), mode: "count" });
    await counterA.removeRecords("gone", [day]);
    const jsm = await jetstreamManager(ncA);
    const info = await jsm.streams.info("KV_fleet_spend", {
      subjects_filter: `$KV.fleet_spend.${SPEND_KEYS.session(day, "gone")}`,
    });
    expect(info.state.subjects ?? {}).toEqual({});
    expect(await read(SPEND_KEYS.total(day, 3), PartitionDayTotal)).toMatchObject({ outputTokens: 40, pending: [] });
  });

  it("the buckets' keys age out two days after their last write", async () => {
    for (const bucket of ["fleet_spend", "fleet_spend_totals"]) {
      const kv = await new Kvm(ncA).open(bucket);
      expect((await kv.status()).ttl).toBe(2 * 86_400_000);
    }
  });
});
