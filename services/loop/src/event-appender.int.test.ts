import { decodeEvent, type FleetEvent, STREAMS, subjects } from "@fleet/protocol";
import { applyTopology, connectNats, createStreamPublisher, readSubject } from "@fleet/runtime";
import { type NatsServer, startNats } from "@fleet/testkit";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSessionAppender } from "./event-appender.js";

let server: NatsServer;
let nc: NatsConnection;
beforeAll(async () => {
  server = await startNats();
  nc = await connectNats({ url: server.url, name: "appender-test" });
  await applyTopology(nc);
});
afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

const event = (sessionId: string, name: string, id: string, producer = "p"): FleetEvent => ({
  type: "session_info",
  name,
  entry: { id, parentId: null },
  meta: { v: 1, id, sessionId, ts: 1_000, producer },
});

describe("session appender (single writer, fenced by the log)", () => {
  it("two writers racing from the same position: exactly one wins, the other is fenced and stays fenced", async () => {
    const js = jetstream(nc);
    const mk = () =>
      createSessionAppender({
        publisher: createStreamPublisher(nc),
        sessionId: "race-1",
        partition: 3,
        lastSeq: 0,
        now: () => 1_000,
      });
    const a = mk();
    const b = mk();
    const [ra, rb] = await Promise.all([
      a.append(event("race-1", "e-a", "e-a", "loop-a")),
      b.append(event("race-1", "e-b", "e-b", "loop-b")),
    ]);
    const outcomes = [ra, rb].map((r) => (r.ok ? "ok" : r.kind)).sort();
    expect(outcomes).toEqual(["fenced", "ok"]);
    const loser = ra.ok ? b : a;
    const winner = ra.ok ? a : b;
    expect(loser.fenced).toBe(true);
    const later = await loser.append(event("race-1", "e-late", "e-late"));
    expect(later).toMatchObject({ ok: false, kind: "fenced" });
    const next = await winner.append(event("race-1", "e-next", "e-next"));
    expect(next.ok).toBe(true);

    const jsm = await jetstreamManager(nc);
    const stored: string[] = [];
    for await (const rec of readSubject(js, jsm, STREAMS.events.name, subjects.event(3, "race-1"))) {
      const ev = decodeEvent(rec.data);
      if (ev.ok) stored.push(ev.value.meta.id);
    }
    expect(stored).toEqual([winner === a ? "e-a" : "e-b", "e-next"]);
  });

  it("a retried publish with the same event id is deduplicated, not appended twice", async () => {
    const a = createSessionAppender({
      publisher: createStreamPublisher(nc),
      sessionId: "dedup-1",
      partition: 0,
      lastSeq: 0,
      now: () => 1,
    });
    const first = await a.append(event("dedup-1", "same", "same-id"));
    expect(first.ok).toBe(true);
    // A second appender that believes the subject is still empty re-sends the same msgID.
    const retry = createSessionAppender({
      publisher: createStreamPublisher(nc),
      sessionId: "dedup-1",
      partition: 0,
      lastSeq: 0,
      now: () => 1,
    });
    const second = await retry.append(event("dedup-1", "same", "same-id"));
    expect(second).toMatchObject({ ok: true, seq: first.ok ? first.seq : -1 });
  });

  it("rejects an event that fails the schema without publishing it", async () => {
    const a = createSessionAppender({
      publisher: createStreamPublisher(nc),
      sessionId: "bad-1",
      partition: 0,
      lastSeq: 0,
      now: () => 1,
    });
    const out = await a.append({
      type: "label",
      targetId: "",
      label: 3,
      meta: { v: 1, id: "x", sessionId: "bad-1", ts: 1, producer: "p" },
    } as never);
    expect(out).toMatchObject({ ok: false, kind: "invalid" });
    expect(a.lastSeq).toBe(0);
  });
});
