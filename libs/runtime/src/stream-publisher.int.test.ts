import { type NatsServer, startNats } from "@fleet/testkit";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectNats } from "./nats-connection.js";
import { isStorageFullError } from "./publish-failure.js";
import {
  createStreamPublisher,
  NO_STREAM,
  PUBLISH_FAILED,
  PUBLISH_TIMEOUT,
  WRONG_LAST_SEQUENCE,
} from "./stream-publisher.js";

let server: NatsServer;
let nc: NatsConnection;
const data = (s: string) => new TextEncoder().encode(s);

beforeAll(async () => {
  server = await startNats();
  nc = await connectNats({ url: server.url, name: "publisher-test" });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: "PUB", subjects: ["pub.>"] });
});
afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

describe("stream publisher", () => {
  it("stores with the same sequence numbers, dedup and expectations as js.publish", async () => {
    const p = createStreamPublisher(nc);
    const first = await p.publish("pub.a", data("1"), { msgID: "m-1", expectLastSubjectSequence: 0 });
    expect(first).toEqual({ ok: true, stream: "PUB", seq: 1, duplicate: false });
    // A repeat of the msgID is acknowledged with the stored sequence, not stored again.
    expect(await p.publish("pub.a", data("1"), { msgID: "m-1", expectLastSubjectSequence: 0 })).toEqual({
      ok: true,
      stream: "PUB",
      seq: 1,
      duplicate: true,
    });
    const stale = await p.publish("pub.a", data("2"), { msgID: "m-2", expectLastSubjectSequence: 0 });
    expect(stale).toMatchObject({ ok: false, code: WRONG_LAST_SEQUENCE });
    expect(stale.ok ? "" : stale.error).toMatch(/wrong last sequence: 1/);
    expect(await p.publish("pub.a", data("2"), { msgID: "m-2", expectLastSubjectSequence: 1 })).toMatchObject({
      ok: true,
      seq: 2,
    });
    // Many in flight at once: every ack reaches its own publish.
    const acks = await Promise.all(Array.from({ length: 500 }, (_, i) => p.publish(`pub.many.${i}`, data(`${i}`))));
    expect(acks.every((a) => a.ok)).toBe(true);
    expect(new Set(acks.map((a) => (a.ok ? a.seq : 0))).size).toBe(500);
    const js = jetstream(nc);
    const stored = await (await js.consumers.get("PUB", { filter_subjects: "pub.many.7" })).next();
    expect(new TextDecoder().decode(stored?.data)).toBe("7");
    expect(p.pending).toBe(0);
    p.close();
  });

  it("writes the headers it is given beside msgID and the expected sequence, and honours Nats-Expected-Stream", async () => {
    const p = createStreamPublisher(nc);
    const ack = await p.publish("pub.headers", data("h"), {
      msgID: "h-1",
      expectLastSubjectSequence: 0,
      headers: { "Fleet-Runner-Id": "runner-7", "Nats-Expected-Stream": "PUB" },
    });
    expect(ack).toMatchObject({ ok: true, stream: "PUB" });
    const jsm = await jetstreamManager(nc);
    const stored = await jsm.streams.getMessage("PUB", { last_by_subj: "pub.headers" });
    expect(stored?.header.get("Fleet-Runner-Id")).toBe("runner-7");
    expect(stored?.header.get("Nats-Msg-Id")).toBe("h-1");
    // Another stream named: the server refuses it (10060) and stores nothing.
    const refused = await p.publish("pub.headers", data("x"), { headers: { "Nats-Expected-Stream": "OTHER" } });
    expect(refused).toMatchObject({ ok: false, code: 10060 });
    expect((await jsm.streams.getMessage("PUB", { last_by_subj: "pub.headers" }))?.seq).toBe(stored?.seq);
    p.close();
  });

  it("reports a subject no stream captures, a missing ack and a closed connection as errors", async () => {
    const p = createStreamPublisher(nc);
    expect(await p.publish("nostream.x", data("x"))).toMatchObject({ ok: false, code: NO_STREAM });
    // A plain subscriber that never answers: the publish is delivered but never acknowledged.
    const silent = nc.subscribe("silent.x", { callback: () => undefined });
    const started = Date.now();
    expect(await p.publish("silent.x", data("x"), { timeoutMs: 300 })).toMatchObject({
      ok: false,
      code: PUBLISH_TIMEOUT,
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    silent.unsubscribe();

    const sub = nc.subscribe("silent.y", { callback: () => undefined });
    await nc.flush();
    const other = await connectNats({ url: server.url, name: "publisher-closing" });
    const q = createStreamPublisher(other);
    const inFlight = q.publish("silent.y", data("y"), { timeoutMs: 30_000 });
    await other.flush();
    await other.close();
    expect(await inFlight).toMatchObject({ ok: false, code: PUBLISH_FAILED });
    expect(await q.publish("pub.after", data("z"))).toMatchObject({ ok: false, code: PUBLISH_FAILED });
    sub.unsubscribe();
    p.close();
  });

  it("retries a publish a full store refuses while keepTrying says so, and it lands once when space is freed", async () => {
    // An account with 2 MB of file storage, filled to within one 64 KiB chunk of its limit.
    const limited = await startNats({
      config: "accounts { A: { jetstream: { max_file: 2MB }, users: [{ user: a, password: a }] } }",
    });
    const anc = await connect({ servers: limited.url, name: "publisher-full", user: "a", pass: "a" });
    try {
      const jsm = await jetstreamManager(anc);
      await jsm.streams.add({ name: "LOG", subjects: ["log.>"] });
      await jsm.streams.add({ name: "FILL", subjects: ["fill"] });
      const js = jetstream(anc);
      const fill = async () => {
        for (let refused = false; !refused; ) {
          refused = await js.publish("fill", new Uint8Array(64 * 1024)).then(() => false, isStorageFullError);
        }
      };
      await fill();
      const p = createStreamPublisher(anc);
      const big = new Uint8Array(100 * 1024);
      const refusals: number[] = [];
      const pending = p.publishDurably("log.a", big, {
        stream: "LOG",
        msgID: "a-1",
        expectLastSubjectSequence: 0,
        keepTrying: (failure) => {
          refusals.push(failure.code);
          return true;
        },
      });
      await new Promise((r) => setTimeout(r, 800));
      expect(refusals.length).toBeGreaterThan(2);
      expect(new Set(refusals)).toEqual(new Set([10002])); // "resource limits exceeded for account"
      await jsm.streams.purge("FILL");
      expect(await pending).toEqual({ ok: true, stream: "LOG", seq: expect.any(Number), duplicate: false });
      expect((await jsm.streams.info("LOG")).state.messages).toBe(1);
      // keepTrying false ends the retries with the refusal.
      await fill();
      const ended = await p.publishDurably("log.b", big, { stream: "LOG", msgID: "b-1", keepTrying: () => false });
      expect(ended).toMatchObject({ ok: false, code: 10002 });
      p.close();
    } finally {
      await anc.close();
      await limited.stop();
    }
  });
});
