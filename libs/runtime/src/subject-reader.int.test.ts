// readSubject against a real nats-server: a read whose consumer stands still fails instead of hanging;
// a caller that is slow to take records does not.
import { type NatsServer, startNats } from "@fleet/testkit";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectNats } from "./nats-connection.js";
import { readSubject } from "./subject-reader.js";

let server: NatsServer;
let nc: NatsConnection;
beforeAll(async () => {
  server = await startNats();
  nc = await connectNats({ url: server.url, name: "reader-test" });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: "READS", subjects: ["reads.>"] });
  const js = jetstream(nc);
  for (let i = 1; i <= 5; i++) await js.publish("reads.a", `m${i}`);
});
afterAll(async () => {
  if (server?.pid) process.kill(server.pid, "SIGCONT");
  await nc?.close();
  await server?.stop();
});

describe("readSubject", () => {
  it("reads a subject through its last message", async () => {
    const seqs: number[] = [];
    for await (const r of readSubject(jetstream(nc), await jetstreamManager(nc), "READS", "reads.a")) seqs.push(r.seq);
    expect(seqs).toEqual([1, 2, 3, 4, 5]);
  });

  it("does not count the time its caller holds a record (a slow consumer is not a stalled read)", async () => {
    const seqs: number[] = [];
    const reader = readSubject(jetstream(nc), await jetstreamManager(nc), "READS", "reads.a", {
      batch: 2,
      idleMs: 200,
    });
    for await (const r of reader) {
      seqs.push(r.seq);
      await new Promise((resolve) => setTimeout(resolve, 350));
    }
    expect(seqs).toEqual([1, 2, 3, 4, 5]);
  });

  it("throws when no message arrives for idleMs before the end (the server stands still)", async () => {
    const pid = server.pid as number;
    const seqs: number[] = [];
    const started = Date.now();
    let stoppedAt = 0;
    const read = (async () => {
      const reader = readSubject(jetstream(nc), await jetstreamManager(nc), "READS", "reads.a", {
        batch: 1,
        idleMs: 1_000,
      });
      for await (const r of reader) {
        seqs.push(r.seq);
        if (seqs.length === 1) {
          process.kill(pid, "SIGSTOP");
          stoppedAt = Date.now();
        }
      }
    })();
    try {
      await expect(read).rejects.toThrow(/reading reads\.a stalled: no message for 1000 ms after seq [1-4] \(end 5\)/);
      // Messages already pulled before the pause still arrive; the end does not.
      expect(seqs.length).toBeLessThan(5);
      expect(Date.now() - stoppedAt).toBeLessThan(5_000);
    } finally {
      process.kill(pid, "SIGCONT");
    }
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
  }, 20_000);
});
