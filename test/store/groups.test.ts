// The event log in K = 3 stream groups: each session's events land in its group's stream, the store
// projects every group with one unfiltered consumer, and clients read sessions of any group.
import { FleetClient } from "@fleet/client";
import { eventStreamNames, eventStreamOfPartition, type FleetEvent, groupOf, partitionOf } from "@fleet/protocol";
import type { StoreService } from "@fleet/session-store";
import { syntheticEvents } from "@fleet/session-store/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  canonicalTree,
  expectedTree,
  type Fixture,
  Publisher,
  query,
  runCli,
  startFixture,
  startStore,
  storedTree,
  waitProjected,
} from "./support.js";

let f: Fixture;
let store: StoreService | undefined;
let client: FleetClient | undefined;
const logs = new Map<string, FleetEvent[]>();
let publisher: Publisher;

beforeAll(async () => {
  f = await startFixture({ partitions: 6, groups: 3 });
  for (let i = 0; i < 12; i++) {
    const sid = `grp-${i}`;
    logs.set(sid, syntheticEvents({ sessionId: sid, seed: 900 + i, runs: 6, branchRate: 0.2, labelRate: 0.2 }));
  }
  publisher = new Publisher(f.js, f.partitions);
  await publisher.publishInterleaved([...logs.values()]);
});

afterAll(async () => {
  await client?.close();
  await store?.stop();
  await f?.stop();
});

describe("a log of 3 stream groups", () => {
  it("stores each session's events in its partition's group stream only", async () => {
    const groupsUsed = new Set([...logs.keys()].map((sid) => groupOf(partitionOf(sid, f.partitions), f.groups)));
    expect(groupsUsed).toEqual(new Set([0, 1, 2]));
    for (const stream of eventStreamNames(f.groups)) {
      const info = await f.jsm.streams.info(stream, { subjects_filter: ">" });
      const stored = Object.keys(info.state.subjects ?? {}).sort();
      const expected = [...logs.keys()]
        .filter((sid) => eventStreamOfPartition(partitionOf(sid, f.partitions), f.groups) === stream)
        .map((sid) => `fleet.evt.${partitionOf(sid, f.partitions)}.${sid}`)
        .sort();
      expect(stored).toEqual(expected);
    }
  });

  it("is projected by one store with one unfiltered consumer per group", async () => {
    store = await startStore(f);
    await waitProjected(f, publisher);
    expect(store.held()).toEqual([0, 1, 2]);
    for (const [sid, events] of logs) {
      const stored = await storedTree(f, sid);
      expect(canonicalTree(stored?.tree as never)).toEqual(expectedTree(events));
      expect(stored?.lastSeq).toBe(publisher.lastSeq.get(sid));
    }
    for (const [g, stream] of eventStreamNames(f.groups).entries()) {
      // Durable consumers only: a replay's ordered consumer (the store healing an empty Redis) is ephemeral.
      const consumers = [];
      for await (const c of f.jsm.consumers.list(stream)) if (c.config.durable_name) consumers.push(c);
      expect(consumers.map((c) => c.name)).toEqual([`store-g${g}`]);
      expect(consumers[0]?.config.filter_subject ?? "").toBe("");
    }
    const tree = await query(f.nc, "get_tree", { sessionId: "grp-5", minSeq: publisher.lastSeq.get("grp-5") });
    expect(tree.ok).toBe(true);
  });

  it("lets a client read sessions of every group from their group's stream", async () => {
    client = await FleetClient.connect({ natsUrl: f.nats.url });
    expect(client.groups).toBe(3);
    for (const [sid, events] of logs) {
      expect(client.eventStream(sid)).toBe(`FLEET_EVENTS_G${groupOf(partitionOf(sid, f.partitions), 3)}`);
      expect(await client.lastSeq(sid)).toBe(publisher.lastSeq.get(sid));
      const replayed = await client.replay(sid);
      expect(replayed.events).toBe(events.length);
    }
  });

  it("rebuilds and verifies every group from its own stream", async () => {
    const rebuilt = await runCli(f, ["rebuild", "--grace-ms", "0"]);
    expect(rebuilt.code, rebuilt.output).toBe(0);
    const total = [...logs.values()].reduce((n, evs) => n + evs.length, 0);
    // The running store may replay some groups for the rebuild (change 59): the CLI counts its own.
    const replayed = Number(/rebuild: namespace \S+ replaces \S+; (\d+) events/.exec(rebuilt.output)?.[1]);
    expect(replayed).toBeGreaterThan(0);
    expect(replayed).toBeLessThanOrEqual(total);
    await waitProjected(f, publisher);
    const verified = await runCli(f, ["verify", "--wait-ms", "5000"]);
    expect(verified.code, verified.output).toBe(0);
    expect(verified.output).toContain("0 difference(s)");
  });
});
