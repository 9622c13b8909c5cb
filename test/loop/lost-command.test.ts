// A re-sent command whose stored copy the command stream no longer holds, with no outcome in the log,
// is published again (a nats-server 2.9 cluster was seen losing stored commands after node kills;
// here the copy is deleted by hand). The loop answers it once; further re-sends add nothing.
import { FleetClient, isFleetError } from "@fleet/client";
import type { LoopWorker } from "@fleet/loop";
import { partitionOf, STREAMS, subjects } from "@fleet/protocol";
import { applyTopology, connectNats, newId } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commander, startTestWorker } from "../support/loop-harness.js";

const PARTITIONS = 16;
let server: NatsServer;
let nc: NatsConnection;
let client: FleetClient;
let loop: { worker: LoopWorker; nc: NatsConnection } | undefined;

beforeAll(async () => {
  server = await startNats();
  nc = await connectNats({ url: server.url, name: "lost-command-test" });
  await applyTopology(nc, { partitions: PARTITIONS });
  client = await FleetClient.connect({ natsUrl: server.url });
});

afterAll(async () => {
  await loop?.worker.stop();
  await loop?.nc.close();
  await client?.close();
  await nc?.close();
  await server?.stop();
});

describe("a command the stream lost", () => {
  it("is published again by a re-send, and gets exactly one outcome", async () => {
    const sessionId = "s-lost-command";
    const commandId = newId();
    const jsm = await jetstreamManager(nc);
    const subject = subjects.command(partitionOf(sessionId, PARTITIONS), sessionId);

    // No loop yet: the command is stored and waits.
    const first = await client.createSession({}, { sessionId, commandId, timeoutMs: 300 }).catch((e: unknown) => e);
    expect(isFleetError(first) && first.kind).toBe("timeout");
    const stored = await jsm.streams.getMessage(STREAMS.commands.name, { last_by_subj: subject });
    expect(stored?.header?.get("Nats-Msg-Id")).toBe(commandId);
    await jsm.streams.deleteMessage(STREAMS.commands.name, stored?.seq as number);

    loop = await startTestWorker({ url: server.url, providers: {}, partitions: PARTITIONS });
    const again = await client.createSession({}, { sessionId, commandId, timeoutMs: 15_000 });
    expect(again.commandId).toBe(commandId);

    // A further re-send finds the outcome in the log and publishes nothing.
    const third = await client.createSession({}, { sessionId, commandId, timeoutMs: 15_000 });
    expect(third.seq).toBe(again.seq);
    const events = await commander(nc, PARTITIONS).events(sessionId);
    const outcomes = events.filter(
      (e) => (e.type === "command_accepted" || e.type === "command_rejected") && e.commandId === commandId,
    );
    expect(outcomes).toHaveLength(1);
    expect(events.filter((e) => e.type === "session_created")).toHaveLength(1);
    expect((await jsm.streams.info(STREAMS.commands.name)).state.messages).toBe(0);
  }, 40_000);
});
