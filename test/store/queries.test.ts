import { buildContext, type FleetEvent, foldSessionTreeEvents, STREAMS, StoreReply, subjects } from "@fleet/protocol";
import type { StoreService } from "@fleet/session-store";
import { syntheticEvents } from "@fleet/session-store/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Fixture, Publisher, query, startFixture, startStore, waitProjected } from "./support.js";

let f: Fixture;
let store: StoreService;
let publisher: Publisher;
const events = syntheticEvents({ sessionId: "q-1", seed: 5, runs: 6 });

beforeAll(async () => {
  f = await startFixture();
  publisher = new Publisher(f.js, f.partitions);
  store = await startStore(f);
  for (const e of events.slice(0, -3)) await publisher.publish(e);
  await waitProjected(f, publisher);
});

afterAll(async () => {
  await store?.stop();
  await f?.stop();
});

describe("query errors", () => {
  it("answers bad JSON, schema violations and unknown sessions, entries and leaves with {ok:false, code, error}", async () => {
    const bad = await f.nc.request(subjects.store("get_context"), "{not json", { timeout: 5_000 });
    expect(JSON.parse(new TextDecoder().decode(bad.data))).toEqual({
      ok: false,
      code: "invalid",
      error: expect.stringMatching(/^not JSON/),
    });
    expect(await query(f.nc, "get_tree", { sessionId: "has space" })).toEqual({
      ok: false,
      code: "invalid",
      error: "sessionId: must match ^[A-Za-z0-9_-]{1,128}$",
    });
    expect(await query(f.nc, "get_entry", { sessionId: "q-1" })).toMatchObject({ ok: false, code: "invalid" });
    expect(await query(f.nc, "get_context", { sessionId: "q-1", timeoutMs: 60_000 })).toMatchObject({
      ok: false,
      code: "invalid",
    });
    expect(await query(f.nc, "list_sessions", { cursor: "bm9wZQ" })).toEqual({
      ok: false,
      code: "invalid",
      error: "invalid cursor",
    });
    for (const op of ["get_context", "get_tree", "get_branch", "export"] as const) {
      expect(await query(f.nc, op, { sessionId: "nobody" })).toEqual({
        ok: false,
        code: "not_found",
        error: "Session nobody not found",
      });
    }
    expect(await query(f.nc, "get_entry", { sessionId: "q-1", entryId: "nope" })).toEqual({
      ok: false,
      code: "not_found",
      error: "Entry nope not found",
    });
    expect(await query(f.nc, "get_context", { sessionId: "q-1", leafId: "nope" })).toEqual({
      ok: false,
      code: "not_found",
      error: "Entry nope not found",
    });
    expect(await query(f.nc, "get_branch", { sessionId: "q-1", leafId: "nope" })).toEqual({
      ok: false,
      code: "not_found",
      error: "Entry nope not found",
    });
    // Still serving.
    const ok = await query(f.nc, "get_context", { sessionId: "q-1" });
    expect(StoreReply.get_context.safeParse(ok).success).toBe(true);
    expect(ok.ok).toBe(true);
  });

  it("gives an empty context at leafId null", async () => {
    expect(await query(f.nc, "get_context", { sessionId: "q-1", leafId: null })).toMatchObject({
      ok: true,
      messages: [],
      leafId: null,
    });
  });

  it("times out a minSeq the projection does not reach", async () => {
    const started = Date.now();
    const reply = await query(f.nc, "get_context", { sessionId: "q-1", minSeq: 1_000_000, timeoutMs: 300 });
    expect(reply).toMatchObject({ ok: false, code: "timeout" });
    // The partition's applied mark tells a stalled projection from a session that is behind.
    expect(String(reply.error)).toMatch(
      new RegExp(
        `^timed out after 300 ms waiting for the projection to reach seq 1000000 \\(session at ${publisher.lastSeq.get("q-1")}, partition \\d+ applied to \\d+\\)$`,
      ),
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
  });

  it("waits for minSeq (read-your-writes) and answers once the event is applied", async () => {
    const rest = events.slice(-3) as FleetEvent[];
    const before = publisher.lastSeq.get("q-1") as number;
    // The last three events get the next sequences of this single-session stream.
    const target = before + rest.length;
    const pending = query(f.nc, "get_tree", { sessionId: "q-1", minSeq: target });
    await new Promise((r) => setTimeout(r, 100));
    for (const e of rest) await publisher.publish(e);
    const reply = await pending;
    expect(reply.ok).toBe(true);
    expect(reply.seq).toBe(target);
    expect((reply.entries as unknown[]).length).toBeGreaterThan(0);
  });

  it("waits for a session that does not exist yet", async () => {
    const other = syntheticEvents({ sessionId: "q-2", seed: 6, runs: 1 });
    // The first sequence the new session's first event can get: the partition's applied position may
    // be anywhere below it (a build marks every partition applied up to the stream's end).
    const minSeq = (await f.jsm.streams.info(STREAMS.events.name)).state.last_seq + 1;
    const pending = query(f.nc, "get_context", { sessionId: "q-2", minSeq, timeoutMs: 5_000 });
    await new Promise((r) => setTimeout(r, 100));
    for (const e of other) await publisher.publish(e);
    // minSeq is met by the session's first event: the answer is the session as of some prefix of its log,
    // whose leaf is one of its entries, or none for the prefix before the first (`session_created` alone).
    const early = await pending;
    const entryIds = other.flatMap((e) =>
      (e as { entry?: { id: string } }).entry ? [(e as { entry: { id: string } }).entry.id] : [],
    );
    expect(early).toMatchObject({ ok: true });
    expect([null, ...entryIds]).toContain(early.leafId);
    const last = await query(f.nc, "get_context", { sessionId: "q-2", minSeq: publisher.lastSeq.get("q-2") as number });
    expect(last).toMatchObject({ ok: true, leafId: (other.at(-2) as { entry?: { id: string } }).entry?.id });
  });

  it("answers a repeated get_context of an unchanged session the same, and follows every new event", async () => {
    const log = syntheticEvents({ sessionId: "q-3", seed: 8, runs: 4, streaming: true });
    const cut = log.findLastIndex((e) => e.type === "message_end") - 1;
    for (const e of log.slice(0, cut)) await publisher.publish(e);
    const at = publisher.lastSeq.get("q-3") as number;
    const first = await query(f.nc, "get_context", { sessionId: "q-3", minSeq: at });
    const again = await query(f.nc, "get_context", { sessionId: "q-3" });
    expect(again).toEqual(first);
    const expected = (events: FleetEvent[]) => {
      const ctx = buildContext(foldSessionTreeEvents(events));
      return ctx.ok ? { messages: ctx.messages, leafId: ctx.leafId } : ctx;
    };
    expect(first).toMatchObject({ ok: true, seq: at, ...expected(log.slice(0, cut)) });
    for (const e of log.slice(cut)) await publisher.publish(e);
    const end = publisher.lastSeq.get("q-3") as number;
    const later = await query(f.nc, "get_context", { sessionId: "q-3", minSeq: end });
    expect(later).toMatchObject({ ok: true, seq: end, ...expected(log) });
    expect((later.messages as unknown[]).length).toBeGreaterThan((first.messages as unknown[]).length);
    // Another leaf of the same unchanged session is its own reply.
    expect(await query(f.nc, "get_context", { sessionId: "q-3", leafId: null })).toMatchObject({
      ok: true,
      messages: [],
      leafId: null,
    });
    expect(await query(f.nc, "get_context", { sessionId: "q-3" })).toEqual(later);
  });
});
