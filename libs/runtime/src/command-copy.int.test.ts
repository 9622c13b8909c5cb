// The one check of whether a command's stored copy still waits in FLEET_COMMANDS, on a real
// nats-server.
import { STREAMS, subjects } from "@fleet/protocol";
import { type NatsServer, startNats } from "@fleet/testkit";
import { type JetStreamManager, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commandCopyState } from "./command-copy.js";
import { connectNats } from "./nats-connection.js";
import { createStreamPublisher, type StreamPublisher } from "./stream-publisher.js";
import { applyTopology } from "./topology.js";

let server: NatsServer;
let nc: NatsConnection;
let jsm: JetStreamManager;
let publisher: StreamPublisher;
beforeAll(async () => {
  server = await startNats();
  nc = await connectNats({ url: server.url, name: "command-copy-test" });
  await applyTopology(nc, { partitions: 4 });
  jsm = await jetstreamManager(nc);
  publisher = createStreamPublisher(nc);
});
afterAll(async () => {
  publisher?.close();
  await nc?.close();
  await server?.stop();
});

async function store(sessionId: string, msgId: string) {
  const subject = subjects.command(1, sessionId);
  const ack = await publisher.publishDurably(subject, new TextEncoder().encode("{}"), {
    msgID: msgId,
    stream: STREAMS.commands.name,
  });
  if (!ack.ok) throw new Error(ack.error);
  return { seq: ack.seq, subject };
}

describe("commandCopyState", () => {
  it("is stored while the copy waits at its sequence, and gone once it left the stream", async () => {
    const copy = await store("s-copy", "c-1");
    expect(await commandCopyState(jsm, { ...copy, msgId: "c-1" })).toBe("stored");
    expect(await commandCopyState(jsm, copy)).toBe("stored");
    await jsm.streams.deleteMessage(STREAMS.commands.name, copy.seq);
    expect(await commandCopyState(jsm, { ...copy, msgId: "c-1" })).toBe("gone");
  });

  it("is gone when another command, or another session's, holds the sequence", async () => {
    const copy = await store("s-other", "c-2");
    expect(await commandCopyState(jsm, { ...copy, msgId: "c-9" })).toBe("gone");
    expect(await commandCopyState(jsm, { ...copy, subject: subjects.command(1, "s-else"), msgId: "c-2" })).toBe("gone");
  });

  it("is unknown when the stream cannot be read", async () => {
    const copy = await store("s-unknown", "c-3");
    const closed = await connectNats({ url: server.url, name: "command-copy-closed" });
    const closedJsm = await jetstreamManager(closed);
    await closed.close();
    expect(await commandCopyState(closedJsm, { ...copy, msgId: "c-3" })).toBe("unknown");
  });
});
