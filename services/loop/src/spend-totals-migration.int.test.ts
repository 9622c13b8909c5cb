import { KV_BUCKETS, SPEND_KEYS } from "@fleet/protocol";
import { applyTopology, connectNats, createLogger } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrateSpendTotals } from "./spend-totals-migration.js";

let server: NatsServer;
let nc: NatsConnection;
beforeAll(async () => {
  server = await startNats();
  nc = await connectNats({ url: server.url, name: "spend-totals-migration" });
});
afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

const total = (day: string, partition: number, outputTokens: number) =>
  JSON.stringify({ day, partition, inputTokens: 0, outputTokens, totalTokens: outputTokens, costUsd: 0, pending: [] });

describe("spend totals migration / the totals of a deployment from before change 60", () => {
  it("moves them once, keeps a newer total, and later starts read nothing of fleet_spend", async () => {
    const day = "2026-02-03";
    const topology = await applyTopology(nc, { partitions: 4 });
    const { spend, spendTotals } = topology.kv;
    for (let p = 0; p < 4; p++) await spend.put(SPEND_KEYS.total(day, p), total(day, p, 10 + p));
    await spend.put(SPEND_KEYS.session(day, "s-1"), "{}");
    // A worker of this version counted partition 2 already: its total is the newer one.
    await spendTotals.put(SPEND_KEYS.total(day, 2), total(day, 2, 99));
    const log = createLogger("test", { level: "silent" });

    await migrateSpendTotals(spend, spendTotals, topology.jsm, log);
    const moved = await Promise.all(
      [0, 1, 2, 3].map(async (p) =>
        (await spendTotals.get(SPEND_KEYS.total(day, p)))?.json<{ outputTokens: number }>(),
      ),
    );
    expect(moved.map((t) => t?.outputTokens)).toEqual([10, 11, 99, 13]);
    const legacy = await topology.jsm.streams.info(`KV_${KV_BUCKETS.spend.name}`, {
      subjects_filter: `$KV.${KV_BUCKETS.spend.name}.>`,
    });
    // The old totals are gone from fleet_spend; the session's record stays.
    expect(Object.keys(legacy.state.subjects ?? {})).toEqual([`$KV.${KV_BUCKETS.spend.name}.session.${day}.s-1`]);
    expect((await spendTotals.get(SPEND_KEYS.migrated))?.operation).toBe("PUT");

    // The next start finds the mark: no request on KV_fleet_spend at all.
    const requests: string[] = [];
    const sniffer = nc.subscribe("$JS.API.>", { callback: (_err, msg) => void requests.push(msg.subject) });
    await nc.flush();
    await migrateSpendTotals(spend, spendTotals, topology.jsm, log);
    await nc.flush();
    sniffer.unsubscribe();
    const legacyStream = `KV_${KV_BUCKETS.spend.name}`;
    expect(requests.filter((s) => s.endsWith(`.${legacyStream}`) || s.includes(`.${legacyStream}.`))).toEqual([]);
    expect((await spendTotals.get(SPEND_KEYS.total(day, 0)))?.json()).toMatchObject({ outputTokens: 10 });
  });
});
