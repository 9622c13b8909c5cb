import type { EventRecord, PreparedBatch, Projector } from "@fleet/session-store/testing";
import { createNamespaceControl, createSlots, startGroupWorker, syntheticEvents } from "@fleet/session-store/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { activateNamespaceFromStart, type Fixture, Publisher, silent, startFixture, waitFor } from "./support.js";

let f: Fixture;

beforeAll(async () => {
  f = await startFixture({ partitions: 1 });
});

afterAll(async () => {
  await f?.stop();
});

describe("a group worker's pending count", () => {
  it("counts undelivered plus unapplied events without asking the server, and reaches 0 once applied", async () => {
    const publisher = new Publisher(f.js, f.partitions);
    const events = syntheticEvents({ sessionId: "pending-1", seed: 5, runs: 30, streaming: true });
    for (const e of events) await publisher.publish(e);
    const lastSeq = publisher.lastSeq.get("pending-1") as number;

    // A projector that holds every batch until released: the worker's own bookkeeping is under test.
    const applied: EventRecord[] = [];
    let release: () => void = () => undefined;
    let gate = new Promise<void>((r) => (release = r));
    const prepared = new Map<PreparedBatch, readonly EventRecord[]>();
    const applyPrepared = async (batch: PreparedBatch) => {
      await gate;
      applied.push(...(prepared.get(batch) ?? []));
    };
    const prepareBatch = async (records: readonly EventRecord[]) => {
      const batch: PreparedBatch = { sessions: new Map(), maxSeqByPartition: new Map() };
      prepared.set(batch, records);
      return batch;
    };
    const projector: Projector = {
      stats: { applied: 0, removed: 0, invalid: 0, gapRepairs: 0, staleRetries: 0 },
      prepareBatch,
      applyPrepared: (_ns, batch) => applyPrepared(batch),
      applyBatch: async (_ns, records) => applyPrepared(await prepareBatch(records)),
    };
    await activateNamespaceFromStart(f.redis, "pending-test");
    const worker = startGroupWorker({
      group: 0,
      groups: 1,
      partitions: f.partitions,
      js: f.js,
      jsm: f.jsm,
      namespaces: createNamespaceControl(f.redis, "pending-test"),
      projector,
      slots: createSlots(1),
      logger: silent,
      maxBatch: 40,
    });
    try {
      // Everything is pending while the first batch is held: delivered, queued or still on the server.
      await waitFor("the first batch", async () => worker.pending === events.length && worker.appliedSeq === 0);
      expect(worker.pending).toBe(events.length);
      release();
      gate = Promise.resolve();
      await waitFor("every event applied", async () => worker.appliedSeq === lastSeq);
      await waitFor("pending to reach 0", async () => worker.pending === 0);
      expect(applied.map((r) => r.seq)).toEqual(Array.from({ length: events.length }, (_, i) => i + 1));
    } finally {
      await worker.stop();
    }
  });
});
