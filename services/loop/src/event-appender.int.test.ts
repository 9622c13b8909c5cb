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

/** The event ids stored on a session's subject, in order. */
async function storedIds(partition: number, sessionId: string): Promise<string[]> {
  const ids: string[] = [];
  const subject = subjects.event(partition, sessionId);
  for await (const rec of readSubject(jetstream(nc), await jetstreamManager(nc), STREAMS.events.name, subject)) {
    const ev = decodeEvent(rec.data);
    if (ev.ok) ids.push(ev.value.meta.id);
  }
  return ids;
}

describe("session appender (single writer, fenced by the log)", () => {
  it("two writers racing from the same position: exactly one wins, the other is fenced and stays fenced", async () => {
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

    expect(await storedIds(3, "race-1")).toEqual([winner === a ? "e-a" : "e-b", "e-next"]);
  });

  it("appends only through an open lease gate: a gate that waits delays the append, a closed one fences it", async () => {
    let release!: (open: boolean) => void;
    const gates: Array<boolean | Promise<boolean>> = [
      true,
      new Promise<boolean>((r) => {
        release = r;
      }),
      false,
    ];
    const appender = createSessionAppender({
      publisher: createStreamPublisher(nc),
      sessionId: "gated-1",
      partition: 2,
      lastSeq: 0,
      now: () => 1_000,
      writeGate: () => gates.shift() ?? true,
    });
    expect((await appender.append(event("gated-1", "g-1", "g-1"))).ok).toBe(true);
    const waiting = appender.append(event("gated-1", "g-2", "g-2"));
    await new Promise((r) => setTimeout(r, 100));
    expect(appender.lastSeq).toBeGreaterThan(0);
    const seqBefore = appender.lastSeq;
    release(true);
    expect((await waiting).ok).toBe(true);
    expect(appender.lastSeq).toBeGreaterThan(seqBefore);
    expect(await appender.append(event("gated-1", "g-3", "g-3"))).toMatchObject({ ok: false, kind: "fenced" });
    expect(appender.fenced).toBe(true);
    // Fenced for good: the gate is not asked again.
    expect(await appender.append(event("gated-1", "g-4", "g-4"))).toMatchObject({ ok: false, kind: "fenced" });
    expect(await storedIds(2, "gated-1")).toEqual(["g-1", "g-2"]);
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

  it("unchecked, still refuses an event over the message size limit without publishing it", async () => {
    const a = createSessionAppender({
      publisher: createStreamPublisher(nc),
      sessionId: "big-1",
      partition: 0,
      lastSeq: 0,
      now: () => 1,
      validate: false,
    });
    const out = await a.append({
      type: "label",
      targetId: "e1",
      label: "x".repeat(2 * 1024 * 1024),
      meta: { v: 1, id: "big", sessionId: "big-1", ts: 1, producer: "p" },
    } as never);
    expect(out).toMatchObject({ ok: false, kind: "invalid", error: expect.stringMatching(/exceeds the limit/) });
    expect(a.lastSeq).toBe(0);
    const ok = await a.append(event("big-1", "small", "small-id"));
    expect(ok).toMatchObject({ ok: true });
  });
});
