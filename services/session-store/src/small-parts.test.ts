import { describe, expect, it } from "vitest";
import { decodeForProjection } from "./event-decoder.js";
import { createInbox } from "./inbox.js";
import { bornKey, indexKeysOf, STORE_SHARDS, sessionKeys, shardOf } from "./keys.js";
import { parseRedisTarget } from "./redis-client.js";
import { createSessionCache } from "./session-cache.js";
import { decodeCursor, encodeCursor } from "./session-index.js";
import { emptyProjectedSession, projectEvents } from "./session-state.js";
import { syntheticEvents } from "./testing/synthetic-session.js";

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const meta = { v: 1, id: "e1", sessionId: "s-1", ts: 5, producer: "p" };

describe("decodeForProjection", () => {
  it("validates projected events in full", () => {
    expect(decodeForProjection(enc({ type: "leaf", targetId: 3, meta }))).toEqual({
      ok: false,
      error: "targetId: Invalid input: expected string, received number",
    });
    expect(decodeForProjection(enc({ type: "leaf", targetId: "x", meta }))).toEqual({
      ok: true,
      event: { type: "leaf", targetId: "x", meta },
    });
  });

  it("keeps only type and meta of the events the projection ignores", () => {
    expect(decodeForProjection(enc({ type: "message_update", deltas: "whatever", meta }))).toEqual({
      ok: true,
      event: { type: "message_update", meta },
    });
    expect(decodeForProjection(enc({ type: "turn_start", meta: { ...meta, v: 2 } }))).toMatchObject({ ok: false });
    expect(decodeForProjection(enc({ type: "teleport", meta }))).toMatchObject({ ok: false });
    expect(decodeForProjection(new TextEncoder().encode("{"))).toMatchObject({
      ok: false,
      error: expect.stringMatching(/^not JSON/),
    });
  });
});

describe("inbox", () => {
  it("hands out what arrived as batches and applies backpressure", async () => {
    const inbox = createInbox<number>();
    for (let i = 0; i < 5; i++) inbox.push(i);
    let released = false;
    const below = inbox.below(3).then(() => {
      released = true;
    });
    expect(await inbox.take(2, 10)).toEqual([0, 1]);
    await Promise.resolve();
    expect(released).toBe(false);
    expect(await inbox.take(10, 10)).toEqual([2, 3, 4]);
    await below;
    expect(released).toBe(true);
    expect(await inbox.take(10, 5)).toEqual([]);
    const waiting = inbox.take(10, 10_000);
    inbox.push(9);
    expect(await waiting).toEqual([9]);
  });
});

describe("session cache", () => {
  it("evicts least recently used sessions beyond its entry budget and keeps the newest state", () => {
    const mk = (sid: string, runs: number) =>
      projectEvents(
        emptyProjectedSession(sid),
        syntheticEvents({ sessionId: sid, seed: 1, runs }).map((event, i) => ({ seq: i + 1, event })),
      );
    const a = mk("a", 2);
    const b = mk("b", 2);
    const weight = (s: typeof a) => s.tree.entries.length + 1;
    const cache = createSessionCache(weight(a) + weight(b) + 2);
    cache.put("n", a);
    cache.put("n", b);
    expect(cache.get("n", "a")).toBe(a);
    cache.put("n", mk("c", 2));
    expect(cache.get("n", "b")).toBeUndefined();
    expect(cache.get("n", "a")).toBe(a);
    cache.put("n", { ...a, lastSeq: 0 });
    expect(cache.get("n", "a")).toBe(a);
    expect(cache.get("other", "a")).toBeUndefined();
  });
});

describe("keys and cursors", () => {
  it("tags every session key and its shard's index keys with {s<shard>}", () => {
    const k = shardOf("s-1");
    expect(Object.values(sessionKeys("fleet:store", "n1", "s-1"))).toEqual(
      ["meta", "entries", "pos", "labels", "leafev", "approvals", "terms"].map(
        (f) => `fleet:store:n1:{s${k}}:s:s-1:${f}`,
      ),
    );
    expect(Object.values(indexKeysOf("fleet:store", "n1", "s-1"))).toEqual(
      ["sessions", "idx:running", "idx:approvals", "idx:search", "idx:agents"].map(
        (f) => `fleet:store:n1:{s${k}}:${f}`,
      ),
    );
    expect(bornKey("fleet:store", "n1")).toBe("{fleet:store:ctl}:born:n1");
  });

  it("spreads sessions over every shard, the same way every time", () => {
    const counts = new Array<number>(STORE_SHARDS).fill(0);
    for (let i = 0; i < 1600; i++) counts[shardOf(`sess-${i}`)] = (counts[shardOf(`sess-${i}`)] ?? 0) + 1;
    expect(Math.min(...counts)).toBeGreaterThan(60);
    expect(Math.max(...counts)).toBeLessThan(140);
    expect(shardOf("s-1")).toBe(shardOf("s-1"));
  });

  it("reads REDIS_URL as one Redis or a cluster", () => {
    expect(parseRedisTarget("redis://127.0.0.1:7000")).toEqual({ kind: "single", url: "redis://127.0.0.1:7000" });
    expect(parseRedisTarget("redis+cluster://u:p%40w@h1:7000,h2:7001")).toEqual({
      kind: "cluster",
      nodes: [
        { host: "h1", port: 7000 },
        { host: "h2", port: 7001 },
      ],
      username: "u",
      password: "p@w",
      tls: false,
    });
    expect(parseRedisTarget("rediss+cluster://h1:7000")).toMatchObject({ kind: "cluster", tls: true });
    expect(() => parseRedisTarget("redis+cluster://h1:notaport")).toThrow(/bad cluster node/);
    expect(() => parseRedisTarget("redis+cluster:h1")).toThrow(/expected redis\+cluster/);
  });

  it("round-trips list cursors and rejects foreign ones", () => {
    expect(decodeCursor(encodeCursor(17, "s-9"))).toEqual({ updatedAt: 17, sessionId: "s-9" });
    expect(decodeCursor("%%%")).toBeNull();
    expect(decodeCursor(Buffer.from('["x","s"]').toString("base64url"))).toBeNull();
  });
});
