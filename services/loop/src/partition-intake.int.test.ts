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

type IntakeOptions = Parameters<typeof startPartitionIntake>[0];
/** An intake of `partition` that records each command's body in `handled` and acknowledges it. */
const intakeOf = async (partition: number, handled: string[], options: Partial<IntakeOptions> = {}) =>
  startPartitionIntake({
    js: jetstream(nc),
    jsm: await jetstreamManager(nc),
    partition,
    partitions: PARTITIONS,
    ackWaitMs: 2_000,
    handle: async (d) => {
      handled.push(new TextDecoder().decode(d.data));
      await d.msg.ackAck();
    },
    onUndeliverable: () => undefined,
    onError: () => undefined,
    ...options,
  });

describe("partition intake", () => {
  it("opens its consumer again when it is deleted under it, and the commands flow on", async () => {
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const sessionId = "intake-reopen";
    const partition = partitionOf(sessionId, PARTITIONS);
    const handled: string[] = [];
    const reopened: string[] = [];
    const intake = await intakeOf(partition, handled, { onReopen: (why) => reopened.push(why) });
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
    const intake = await intakeOf(partition, handled, {
      ackWaitMs,
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

  it("sweeps a command the consumer moved past: read from the stream, handled, and deleted on ack", async () => {
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const sessionId = "intake-skipped";
    const partition = partitionOf(sessionId, PARTITIONS);
    const config = loopCommandConsumer(partition, 1_000);
    // A consumer that passes over a stored command, as a cluster's consumer was seen to: here its
    // filter names another session (made anew: an earlier test may have left the partition's).
    await jsm.consumers.delete(STREAMS.commands.name, config.durable_name).catch(() => undefined);
    await jsm.consumers.add(STREAMS.commands.name, {
      ...config,
      filter_subject: subjects.command(partition, "someone-else"),
    } as never);
    const skipped = await js.publish(subjects.command(partition, sessionId), "skipped", { msgID: "skipped" });
    const handled: string[] = [];
    const swept: number[][] = [];
    const intake = await intakeOf(partition, handled, {
      ackWaitMs: 1_000,
      onSwept: (seqs) => swept.push(seqs),
      stallCheckMs: 200,
      stuckAfterMs: 1_000,
    });
    try {
      await vi.waitFor(() => expect(handled).toContain("skipped"), { timeout: 15_000, interval: 200 });
      expect(swept).toEqual([[skipped.seq]]);
      const stored = async () => {
        const info = await jsm.streams.info(STREAMS.commands.name, { subjects_filter: config.filter_subject });
        return Object.values(info.state.subjects ?? {}).reduce((sum, n) => sum + n, 0);
      };
      await vi.waitFor(async () => expect(await stored()).toBe(0), { timeout: 5_000, interval: 100 });
      // The consumer made again delivers what comes next.
      await js.publish(subjects.command(partition, sessionId), "next", { msgID: "next" });
      await vi.waitFor(() => expect(handled).toContain("next"), { timeout: 15_000, interval: 200 });
    } finally {
      await intake.stop();
    }
  }, 40_000);

  it("leaves another partition's command stored for its own partition and drops one naming no session", async () => {
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const own = "intake-own";
    const p = partitionOf(own, PARTITIONS);
    const other = Array.from({ length: 50 }, (_, i) => `intake-other-${i}`).find(
      (s) => partitionOf(s, PARTITIONS) !== p,
    );
    if (!other) throw new Error("no session of another partition");
    const q = partitionOf(other, PARTITIONS);
    // A consumer that delivers another partition's commands, as a cluster's was seen to: here its
    // filter is the whole stream (a work-queue stream allows it only alone, so the others go first).
    for (const c of await jsm.consumers.list(STREAMS.commands.name).next()) {
      await jsm.consumers.delete(STREAMS.commands.name, c.name);
    }
    const config = loopCommandConsumer(p, 1_000);
    await jsm.consumers.add(STREAMS.commands.name, { ...config, filter_subject: "fleet.cmd.>" } as never);
    const foreign = await js.publish(subjects.command(q, other), "foreign", { msgID: "foreign" });
    const garbage = await js.publish(subjects.command(p, other), "garbage", { msgID: "garbage" });
    await js.publish(subjects.command(p, own), "own", { msgID: "own" });
    const handled: string[] = [];
    const left: number[] = [];
    const dropped: string[] = [];
    const start = (partition: number) =>
      intakeOf(partition, handled, {
        ackWaitMs: 1_000,
        onUndeliverable: (subject) => dropped.push(subject),
        onForeign: (_subject, seq) => left.push(seq),
        stuckAfterMs: 60_000,
      });
    const intake = await start(p);
    try {
      await vi.waitFor(() => expect(handled).toEqual(["own"]), { timeout: 5_000 });
      await vi.waitFor(() => expect(left).toContain(foreign.seq), { timeout: 5_000 });
      expect(dropped).toEqual([subjects.command(p, other)]);
      await vi.waitFor(
        async () => expect(await jsm.streams.getMessage(STREAMS.commands.name, { seq: garbage.seq })).toBeNull(),
        { timeout: 5_000 },
      );
      expect((await jsm.streams.getMessage(STREAMS.commands.name, { seq: foreign.seq }))?.subject).toBe(
        subjects.command(q, other),
      );
    } finally {
      await intake.stop();
    }
    // Its own partition's intake handles it.
    await jsm.consumers.delete(STREAMS.commands.name, config.durable_name);
    const owner = await start(q);
    try {
      await vi.waitFor(() => expect(handled).toEqual(["own", "foreign"]), { timeout: 10_000 });
    } finally {
      await owner.stop();
    }
  }, 40_000);
});
