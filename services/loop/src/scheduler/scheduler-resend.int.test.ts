// A fire dropped without an outcome, on a real nats-server: a loop worker that fails to decide a
// command (its lease or the storage went mid-command) acks it, so the fire's commands leave
// FLEET_COMMANDS with no open work and no outcome in the session's log. The scheduler re-sends them
// (`<id>#<seq>`, PROTOCOL "Re-sending") and keeps the fire open until it is decided, instead of taking
// the slot as done (found by `npm run chaos -- --seed 1` under storage_full).
import { randomUUID } from "node:crypto";
import { encodeEvent, fireSessionId, partitionOf, type ScheduleEvent, STREAMS, subjects } from "@fleet/protocol";
import { createLogBuilder } from "@fleet/protocol/testing";
import { appendScheduleEvent, applyTopology, connectNats, createLogger, readScheduleLog } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Scheduler, startScheduler } from "./scheduler.js";

const PARTITIONS = 4;
const ID = "resend";
let server: NatsServer;
let nc: NatsConnection;
let scheduler: Scheduler | undefined;

beforeAll(async () => {
  server = await startNats();
  nc = await connectNats({ url: server.url, name: "scheduler-resend-test" });
});
afterAll(async () => {
  await scheduler?.stop();
  await nc?.close();
  await server?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("scheduler / a fire dropped without an outcome", () => {
  it("is re-sent and kept open until its session decides it; then the next slot fires", async () => {
    const topo = await applyTopology(nc, { partitions: PARTITIONS, leaseTtlMs: 1_000 });
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const events = async () => (await readScheduleLog(jsm, ID)).records.map((r) => r.event);
    const now = Date.now();
    const created: ScheduleEvent = {
      type: "schedule_created",
      definition: {
        scheduleId: ID,
        spec: { kind: "every", everyMs: 1_000 },
        target: { kind: "new_session", prompt: "hello" },
        overlap: "skip",
        catchupWindowMs: 60_000,
      },
      meta: { v: 1, id: randomUUID(), scheduleId: ID, ts: now, producer: "test" },
    };
    await appendScheduleEvent(js, created, 0);
    scheduler = startScheduler({
      js,
      jsm,
      leases: topo.kv.leases,
      workerId: "sched-test",
      leaseTtlMs: topo.leaseTtlMs,
      partitions: PARTITIONS,
      tickMs: 100,
      now: Date.now,
      newId: randomUUID,
      logger: createLogger("scheduler-test", { level: "silent" }),
    });
    await scheduler.start();

    // No loop worker here: the first fire stays queued, so the next slots are skipped for overlap.
    await expect.poll(async () => (await events()).filter((e) => e.type === "schedule_skipped").length).toBe(1);
    const fire = (await events()).find((e) => e.type === "schedule_fired");
    if (fire?.type !== "schedule_fired") throw new Error("no fire");
    expect(fire.sessionId).toBe(fireSessionId(ID, fire.slot));
    const subject = subjects.command(partitionOf(fire.sessionId, PARTITIONS), fire.sessionId);

    // A loop worker acks the fire's commands without deciding them.
    await jsm.streams.purge(STREAMS.commands.name, { filter: subject });
    // Re-sent: its create_session and prompt are queued again, as copies of the fire's commands.
    await expect
      .poll(async () => {
        const m = await jsm.streams.getMessage(STREAMS.commands.name, { last_by_subj: subject }).catch(() => null);
        return m?.header?.get("Nats-Msg-Id");
      })
      .toBe(`${fire.commandId}#${fire.commandSeq}`);
    await sleep(1_500);
    const meanwhile = await events();
    expect(meanwhile.filter((e) => e.type === "schedule_fired")).toHaveLength(1);
    expect(meanwhile.filter((e) => e.type === "schedule_skipped").length).toBeGreaterThan(1);

    // The session decides the copy: its outcome is in the log, the queue is empty, and the fire closed.
    const log = createLogBuilder(1, fire.sessionId);
    log.add({ type: "command_accepted", commandId: fire.commandId, commandType: "prompt" });
    for (const e of log.events) {
      const encoded = encodeEvent(e);
      if (!encoded.ok) throw new Error(encoded.error);
      await js.publish(subjects.event(partitionOf(fire.sessionId, PARTITIONS), fire.sessionId), encoded.bytes);
    }
    await jsm.streams.purge(STREAMS.commands.name, { filter: subject });
    await expect.poll(async () => (await events()).filter((e) => e.type === "schedule_fired").length).toBe(2);
    const outcomes = (await events()).filter((e) => "slot" in e);
    // One outcome per slot, in slot order.
    const slots = outcomes.map((e) => ("slot" in e ? e.slot.at : 0));
    expect(new Set(slots).size).toBe(slots.length);
  }, 60_000);
});
