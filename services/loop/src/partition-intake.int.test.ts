import { loopCommandConsumer, partitionOf, STREAMS, subjects } from "@fleet/protocol";
import { applyTopology, connectNats } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startPartitionIntake } from "./partition-intake.js";

const PARTITIONS = 4;
let server: NatsServer;
let nc: NatsConnection;
beforeAll(async () => {
  server = await startNats();
  nc = await connectNats({ url: server.url, name: "intake-test" });
  await applyTopology(nc, { partitions: PARTITIONS });
});
afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

describe("partition intake", () => {
  it("opens its consumer again when it is deleted under it, and the commands flow on", async () => {
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const sessionId = "intake-reopen";
    const partition = partitionOf(sessionId, PARTITIONS);
    const handled: string[] = [];
    const reopened: string[] = [];
    const intake = await startPartitionIntake({
      js,
      jsm,
      partition,
      partitions: PARTITIONS,
      ackWaitMs: 2_000,
      handle: async (d) => {
        handled.push(new TextDecoder().decode(d.data));
        await d.msg.ackAck();
      },
      onUndeliverable: () => undefined,
      onError: () => undefined,
      onReopen: (why) => reopened.push(why),
    });
    try {
      const send = (body: string) => js.publish(subjects.command(partition, sessionId), body, { msgID: body });
      await send("before");
      await vi.waitFor(() => expect(handled).toEqual(["before"]), { timeout: 5_000 });

      await jsm.consumers.delete(STREAMS.commands.name, loopCommandConsumer(partition).durable_name);
      const deletedAt = Date.now();
      await send("after");
      await vi.waitFor(() => expect(handled).toEqual(["before", "after"]), { timeout: 20_000, interval: 200 });
      expect(reopened.length).toBeGreaterThan(0);
      console.log(`intake reopened ${Date.now() - deletedAt} ms after its consumer was deleted (${reopened[0]})`);
    } finally {
      await intake.stop();
    }
  }, 30_000);

  it("makes its consumer again when a command stays pending that none of its pulls holds", async () => {
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const sessionId = "intake-stuck";
    const partition = partitionOf(sessionId, PARTITIONS);
    // The ack wait is long, so only the stall check can bring the command back within the test.
    const ackWaitMs = 60_000;
    const config = loopCommandConsumer(partition, ackWaitMs);
    await jsm.consumers.add(STREAMS.commands.name, config as never);
    const stuck = await js.publish(subjects.command(partition, sessionId), "stuck", { msgID: "stuck" });
    // Delivered to a pull that is gone and never acked: pending for the whole ack wait.
    const lost = await (await js.consumers.get(STREAMS.commands.name, config.durable_name)).next();
    expect(lost?.seq).toBe(stuck.seq);
    const handled: string[] = [];
    const stalled: string[] = [];
    const intake = await startPartitionIntake({
      js,
      jsm,
      partition,
      partitions: PARTITIONS,
      ackWaitMs,
      handle: async (d) => {
        handled.push(new TextDecoder().decode(d.data));
        await d.msg.ackAck();
      },
      onUndeliverable: () => undefined,
      onError: () => undefined,
      onStalled: (c) => stalled.push(`${c.pending}/${c.undelivered}/${c.held}`),
      stallCheckMs: 200,
      stuckAfterMs: 1_000,
    });
    try {
      await js.publish(subjects.command(partition, sessionId), "fresh", { msgID: "fresh" });
      await vi.waitFor(() => expect(handled).toContain("fresh"), { timeout: 5_000 });
      await vi.waitFor(() => expect(handled).toContain("stuck"), { timeout: 15_000, interval: 200 });
      expect(stalled[0]).toBe("1/0/0");
      // Acked once before the consumer was made again: not delivered a second time.
      expect(handled.filter((h) => h === "fresh")).toHaveLength(1);
    } finally {
      await intake.stop();
    }
  }, 30_000);
});
