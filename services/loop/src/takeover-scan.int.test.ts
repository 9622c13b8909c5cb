// The takeover scan against a real nats-server: sessions that may hold interrupted work are
// recovered, and one whose recovery fails is tried again until it succeeds.
import { encodeEvent, type FleetEvent, partitionOf, subjects } from "@fleet/protocol";
import { CONFIG, createLogBuilder } from "@fleet/protocol/testing";
import { applyTopology, connectNats } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scanPartition } from "./takeover-scan.js";

const PARTITIONS = 4;
let server: NatsServer;
let nc: NatsConnection;
beforeAll(async () => {
  server = await startNats();
  nc = await connectNats({ url: server.url, name: "scan-test" });
  await applyTopology(nc, { partitions: PARTITIONS });
});
afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

async function publish(events: FleetEvent[]) {
  const js = jetstream(nc);
  for (const e of events) {
    const encoded = encodeEvent(e);
    if (!encoded.ok) throw new Error(encoded.error);
    await js.publish(subjects.event(partitionOf(e.meta.sessionId, PARTITIONS), e.meta.sessionId), encoded.bytes);
  }
}

describe("takeover scan", () => {
  it("recovers a session whose last event is an acceptance, retrying a failed recovery; skips ended ones", async () => {
    const open = createLogBuilder(1, "scan-open");
    open.add({ type: "session_created", config: CONFIG });
    open.add({ type: "command_accepted", commandId: "c1", commandType: "prompt" });
    const partition = partitionOf("scan-open", PARTITIONS);
    // A session of the same partition whose last event closes its run: nothing to recover.
    let closedId = "scan-closed-0";
    for (let i = 1; partitionOf(closedId, PARTITIONS) !== partition; i++) closedId = `scan-closed-${i}`;
    const closed = createLogBuilder(2, closedId);
    closed.add({ type: "session_created", config: CONFIG });
    closed.add({ type: "command_rejected", commandId: "c2", commandType: "prompt", code: "busy", reason: "busy" });
    await publish([...open.events, ...closed.events]);

    const calls: string[] = [];
    const errors: string[] = [];
    await scanPartition({
      jsm: await jetstreamManager(nc),
      partition,
      active: () => true,
      recover: async (sessionId) => {
        calls.push(sessionId);
        if (calls.length < 3) throw new Error("timeout");
      },
      onError: (_err, subject) => errors.push(subject),
      retryMs: 20,
    });
    expect(calls).toEqual(["scan-open", "scan-open", "scan-open"]);
    expect(errors).toEqual([subjects.event(partition, "scan-open"), subjects.event(partition, "scan-open")]);
  });

  it("stops retrying once the partition is let go", async () => {
    const b = createLogBuilder(3, "scan-gone");
    b.add({ type: "session_created", config: CONFIG });
    b.add({ type: "command_accepted", commandId: "c3", commandType: "prompt" });
    await publish(b.events);
    let held = true;
    let calls = 0;
    await scanPartition({
      jsm: await jetstreamManager(nc),
      partition: partitionOf("scan-gone", PARTITIONS),
      active: () => held,
      recover: async () => {
        calls++;
        if (calls === 2) held = false;
        throw new Error("timeout");
      },
      onError: () => undefined,
      retryMs: 20,
    });
    expect(calls).toBe(2);
  });
});
