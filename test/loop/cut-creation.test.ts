// A session whose creation was accepted but whose `session_created` a crash (or a full store) kept
// out of the log: a command that arrives before the creation's redelivery waits for it instead of
// being rejected `not_found` (PROTOCOL.md change 73). Real nats-server, the loop worker in process.
import type { LoopWorker } from "@fleet/loop";
import { encodeEvent, type FleetEvent, partitionOf, subjects } from "@fleet/protocol";
import { applyTopology, connectNats, newId } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commander, startTestWorker } from "../support/loop-harness.js";

const PARTITIONS = 16;
let server: NatsServer;
let nc: NatsConnection;
let loop: { worker: LoopWorker; nc: NatsConnection } | undefined;

beforeAll(async () => {
  server = await startNats();
  nc = await connectNats({ url: server.url, name: "cut-creation-test" });
  await applyTopology(nc, { partitions: PARTITIONS });
  loop = await startTestWorker({ url: server.url, providers: {}, partitions: PARTITIONS });
});

afterAll(async () => {
  await loop?.worker.stop();
  await loop?.nc.close();
  await nc?.close();
  await server?.stop();
});

const outcomes = (events: readonly FleetEvent[]) =>
  events.flatMap((e) =>
    e.type === "command_accepted" || e.type === "command_rejected" ? [`${e.type}:${e.commandId}`] : [],
  );

describe("a creation cut after its acceptance", () => {
  it("a command sent before the creation's redelivery is decided after it, not rejected not_found", async () => {
    const sessionId = `s-cut-${newId().slice(-8)}`;
    const createId = "c-create";
    const cmd = commander(nc, PARTITIONS);
    // The log as a worker killed between the two events of the creation's acceptance leaves it.
    const accepted = {
      type: "command_accepted",
      commandId: createId,
      commandType: "create_session",
      meta: { v: 1, id: newId(), sessionId, ts: Date.now(), producer: "test" },
    };
    const encoded = encodeEvent(accepted as FleetEvent);
    if (!encoded.ok) throw new Error(encoded.error);
    await jetstream(nc).publish(subjects.event(partitionOf(sessionId, PARTITIONS), sessionId), encoded.bytes);

    const abortId = await cmd.send(sessionId, { type: "abort" });
    // The abort is delivered and left for later: no outcome while the creation is incomplete.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(outcomes(await cmd.events(sessionId))).toEqual([`command_accepted:${createId}`]);

    // The creation's redelivery completes it; the abort is then decided on the created session.
    await cmd.send(sessionId, { type: "create_session", config: {} }, createId);
    const events = await cmd.waitFor(sessionId, (es) => outcomes(es).length === 2, 15_000);
    expect(outcomes(events)).toEqual([`command_accepted:${createId}`, `command_accepted:${abortId}`]);
    const types = events.map((e) => e.type).filter((t) => t !== "owner_change");
    expect(types).toEqual(["command_accepted", "session_created", "command_accepted"]);
  }, 30_000);
});
