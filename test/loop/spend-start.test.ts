// A loop worker's start does not read the tenant's sessions' spend: it reads the day's partition
// totals (PROTOCOL change 43), and enforces the tenant's limit from them.
import { createAnthropicStreamFn, type LoopWorker } from "@fleet/loop";
import {
  BUDGET_KEYS,
  type FleetEvent,
  KV_BUCKETS,
  PartitionDayTotal,
  partitionOf,
  SPEND_KEYS,
  utcDayOf,
} from "@fleet/protocol";
import { applyTopology, connectNats } from "@fleet/runtime";
import { type FakeAnthropic, fakeReply, type NatsServer, startFakeAnthropic, startNats } from "@fleet/testkit";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commander, startTestWorker } from "../support/loop-harness.js";

const PARTITIONS = 16;
const SESSIONS = 3_000;
const LEGACY = 1_000;

let server: NatsServer;
let fake: FakeAnthropic;
let nc: NatsConnection;
let worker: LoopWorker | undefined;
let workerNc: NatsConnection | undefined;

beforeAll(async () => {
  server = await startNats();
  fake = await startFakeAnthropic();
  nc = await connectNats({ url: server.url, name: "spend-start-test" });
});
afterAll(async () => {
  await worker?.stop();
  await workerNc?.close();
  await nc?.close();
  await fake?.stop();
  await server?.stop();
});

const outcomes = (events: FleetEvent[]) =>
  events.flatMap((e) =>
    e.type === "command_accepted" || e.type === "command_rejected"
      ? [e.type === "command_rejected" ? `${e.code}: ${e.reason}` : "accepted"]
      : [],
  );

describe("loop service / the tenant's spend at a worker's start", () => {
  it(`reads the day's ${PARTITIONS} partition totals, none of ${SESSIONS} sessions' records, and refuses a run at the limit`, async () => {
    const day = utcDayOf(Date.now());
    const topology = await applyTopology(nc, { partitions: PARTITIONS });
    const spendKv = topology.kv.spend;
    await topology.kv.budgets.put(BUDGET_KEYS.limits, JSON.stringify({ outputTokens: 1_000 }));
    // A tenant with 3,000 sessions that spent today: their records, and the totals that count them.
    const perPartition = new Map<number, number>();
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < SESSIONS; i++) {
      const sessionId = `hist-${i}`;
      const p = partitionOf(sessionId, PARTITIONS);
      const out = i < 1_000 ? 1 : 0;
      perPartition.set(p, (perPartition.get(p) ?? 0) + out);
      const record = { sessionId, day, events: 4, inputTokens: 3, outputTokens: out, totalTokens: 3 + out, costUsd: 0 };
      writes.push(spendKv.put(SPEND_KEYS.session(day, sessionId), JSON.stringify(record)));
      if (writes.length >= 500) await Promise.all(writes.splice(0));
    }
    for (const [p, out] of perPartition) {
      const total = { day, partition: p, inputTokens: 0, outputTokens: out, totalTokens: out, costUsd: 0, pending: [] };
      writes.push(spendKv.put(SPEND_KEYS.total(day, p), JSON.stringify(total)));
    }
    // And per-session records from before the totals, which nothing reads any more.
    for (let i = 0; i < LEGACY; i++) {
      writes.push(topology.kv.budgets.put(`spend.${day}.legacy-${i}`, JSON.stringify({ sessionId: `legacy-${i}` })));
      if (writes.length >= 500) await Promise.all(writes.splice(0));
    }
    await Promise.all(writes);

    // Every JetStream API request of the worker's start, as the server receives it.
    const requests: string[] = [];
    const sniffer = nc.subscribe("$JS.API.>", { callback: (_err, msg) => void requests.push(msg.subject) });
    await nc.flush();
    const started = await startTestWorker({
      url: server.url,
      partitions: PARTITIONS,
      providers: { anthropic: createAnthropicStreamFn({ apiKey: "sk-test", baseURL: fake.url, maxRetries: 0 }) },
      defaultProvider: "anthropic",
    });
    worker = started.worker;
    workerNc = started.nc;
    await nc.flush();
    sniffer.unsubscribe();

    // The totals were in `fleet_spend` (a deployment from before change 60): this start moves them,
    // reading them once (a key each), and never a session's record.
    const on = (stream: string) => (s: string) => s.endsWith(`.${stream}`) || s.includes(`.${stream}.`);
    const spendStream = `KV_${KV_BUCKETS.spend.name}`;
    const totalsStream = `KV_${KV_BUCKETS.spendTotals.name}`;
    const budgetsStream = `KV_${KV_BUCKETS.budgets.name}`;
    const onSpend = requests.filter(on(spendStream));
    const directGets = onSpend.filter((s) => s.startsWith(`$JS.API.DIRECT.GET.${spendStream}.`));
    expect(onSpend.filter((s) => s.includes(".session."))).toEqual([]);
    expect(directGets.length).toBeLessThanOrEqual(PARTITIONS);
    expect(directGets.every((s) => s.includes(`.total.${day}.`))).toBe(true);
    const onTotals = requests.filter(on(totalsStream));
    // `limits`: a watch and a get; the legacy records: one purge.
    const onBudgets = requests.filter((s) => on(budgetsStream)(s) && !s.startsWith("$JS.API.STREAM.PURGE"));
    expect(onBudgets.filter((s) => s.startsWith("$JS.API.DIRECT.GET")).length).toBeLessThanOrEqual(1);
    expect(onSpend.length + onTotals.length + onBudgets.length).toBeLessThan(2 * PARTITIONS + 16);
    console.log(
      `worker start: ${onSpend.length} requests on ${spendStream} (${directGets.length} key reads), ${onTotals.length} on ${totalsStream}, ${onBudgets.length} on ${budgetsStream}, with ${SESSIONS} session records and ${LEGACY} legacy ones`,
    );

    // The legacy records are gone (one purge), so are the old totals (moved), and a prompt is
    // refused at the tenant's limit.
    const jsm = await jetstreamManager(nc);
    const oldTotals = await jsm.streams.info(spendStream, {
      subjects_filter: `$KV.${KV_BUCKETS.spend.name}.${SPEND_KEYS.totalsAll}`,
    });
    expect(oldTotals.state.subjects ?? {}).toEqual({});
    expect((await topology.kv.spendTotals.get(SPEND_KEYS.migrated))?.operation).toBe("PUT");
    await expect
      .poll(async () => {
        const info = await jsm.streams.info(budgetsStream, {
          subjects_filter: `$KV.${KV_BUCKETS.budgets.name}.spend.>`,
        });
        return Object.keys(info.state.subjects ?? {}).length;
      })
      .toBe(0);
    const cmd = commander(nc, PARTITIONS);
    await cmd.send("fresh-1", { type: "prompt", text: "go" });
    const events = await cmd.waitFor("fresh-1", (ev) => outcomes(ev).length === 1, 20_000);
    expect(outcomes(events)).toEqual(["budget_exceeded: Budget exceeded: tenant output tokens 1000/1000"]);
    expect(fake.requests).toHaveLength(0);

    // Raised, the run goes, and its spend lands in its partition's total (a revision-checked update).
    await topology.kv.budgets.put(BUDGET_KEYS.limits, JSON.stringify({ outputTokens: 2_000 }));
    fake.script(fakeReply("done", { usage: { input_tokens: 20, output_tokens: 7 } }));
    const p = partitionOf("fresh-1", PARTITIONS);
    const before = perPartition.get(p) ?? 0;
    // The worker follows the limits with a watch: a prompt sent before it saw them is refused again.
    let last = "";
    for (let decided = 1; last !== "accepted" && decided < 20; decided++) {
      await cmd.send("fresh-1", { type: "prompt", text: "again" });
      const ev = await cmd.waitFor("fresh-1", (e) => outcomes(e).length > decided, 20_000);
      last = outcomes(ev).at(-1) ?? "";
      if (last !== "accepted") await new Promise((r) => setTimeout(r, 200));
    }
    expect(last).toBe("accepted");
    const kv = await new Kvm(nc).open(KV_BUCKETS.spendTotals.name);
    await expect
      .poll(async () => PartitionDayTotal.parse((await kv.get(SPEND_KEYS.total(day, p)))?.json()).outputTokens)
      .toBe(before + 7);
  }, 120_000);
});
