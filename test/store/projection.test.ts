import { buildContext, type FleetEvent, foldSessionTreeEvents, getBranch, StoreReply } from "@fleet/protocol";
import type { StoreService } from "@fleet/session-store";
import { shardOf, syntheticEvents } from "@fleet/session-store/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  canonicalTree,
  expectedTree,
  type Fixture,
  Publisher,
  query,
  startFixture,
  startStore,
  storedTree,
  waitProjected,
} from "./support.js";

const SESSIONS = 12;
let f: Fixture;
let store: StoreService;
let publisher: Publisher;
const logs = new Map<string, FleetEvent[]>();

beforeAll(async () => {
  f = await startFixture({ partitions: 4 });
  publisher = new Publisher(f.js, f.partitions);
  for (let i = 0; i < SESSIONS; i++) {
    const sid = `proj-${i}`;
    logs.set(
      sid,
      syntheticEvents({
        sessionId: sid,
        seed: 100 + i,
        runs: 25,
        branchRate: 0.25,
        compactionRate: 0.15,
        labelRate: 0.3,
        settingsRate: 0.3,
        streaming: i % 2 === 0,
        startTs: 1_764_450_000_000 + i * 7,
      }),
    );
  }
  // Half the log before the store starts (catch-up), half while it runs (live).
  const halves = [...logs.values()].map((evs) => [evs.slice(0, evs.length >> 1), evs.slice(evs.length >> 1)]);
  await publisher.publishInterleaved(halves.map((h) => h[0] as FleetEvent[]));
  store = await startStore(f);
  await publisher.publishInterleaved(halves.map((h) => h[1] as FleetEvent[]));
  await waitProjected(f, publisher);
});

afterAll(async () => {
  await store?.stop();
  await f?.stop();
});

describe("projection", () => {
  it("holds exactly the protocol reducer's fold for every session", async () => {
    for (const [sid, events] of logs) {
      const stored = await storedTree(f, sid);
      expect(stored).not.toBeNull();
      expect(canonicalTree(stored?.tree as never)).toEqual(expectedTree(events));
      expect(stored?.lastSeq).toBe(publisher.lastSeq.get(sid));
    }
  });

  it("answers get_tree, get_context, get_branch and get_entry from that fold", async () => {
    for (const [sid, events] of logs) {
      const tree = foldSessionTreeEvents(events);
      const seq = publisher.lastSeq.get(sid);
      const t = await query(f.nc, "get_tree", { sessionId: sid });
      expect(StoreReply.get_tree.safeParse(t).success).toBe(true);
      expect(t).toEqual(
        JSON.parse(JSON.stringify({ ok: true, entries: tree.entries, leafId: tree.leafId, labels: tree.labels, seq })),
      );
      const ctx = await query(f.nc, "get_context", { sessionId: sid });
      expect(StoreReply.get_context.safeParse(ctx).success).toBe(true);
      const { ok: _ok, ...built } = buildContext(tree) as Exclude<ReturnType<typeof buildContext>, { ok: false }>;
      expect(ctx).toEqual(JSON.parse(JSON.stringify({ ok: true, ...built, seq })));
      // An older leaf: the branch and the context there.
      const middle = tree.entries[Math.floor(tree.entries.length / 2)];
      if (!middle) throw new Error("empty tree");
      const branch = await query(f.nc, "get_branch", { sessionId: sid, leafId: middle.id });
      expect(branch).toEqual(
        JSON.parse(JSON.stringify({ ok: true, entries: (getBranch(tree, middle.id) as { entries: unknown }).entries })),
      );
      const ctxAt = await query(f.nc, "get_context", { sessionId: sid, leafId: middle.id });
      expect(ctxAt.leafId).toBe(middle.id);
      expect(ctxAt.messages).toEqual(
        JSON.parse(JSON.stringify((buildContext(tree, middle.id) as { messages: unknown }).messages)),
      );
      const entry = await query(f.nc, "get_entry", { sessionId: sid, entryId: middle.id });
      expect(entry).toEqual(JSON.parse(JSON.stringify({ ok: true, entry: middle })));
    }
  });

  it("lists sessions most recently updated first, page by page", async () => {
    const expected = [...logs]
      .map(([sid, evs]) => ({
        sessionId: sid,
        name: foldSessionTreeEvents(evs).name,
        status: "idle",
        updatedAt: (evs.at(-1) as FleetEvent).meta.ts,
        seq: publisher.lastSeq.get(sid),
      }))
      .sort((a, b) => b.updatedAt - a.updatedAt || (a.sessionId < b.sessionId ? 1 : -1));
    const seen: unknown[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await query(f.nc, "list_sessions", { limit: 5, ...(cursor ? { cursor } : {}) });
      expect(StoreReply.list_sessions.safeParse(page).success).toBe(true);
      seen.push(...(page.sessions as unknown[]));
      cursor = page.cursor as string | undefined;
      pages++;
    } while (cursor);
    expect(pages).toBe(Math.ceil(SESSIONS / 5));
    expect(seen).toEqual(expected);
  });

  it("indexes sessions by updatedAt in Redis with its shard's {s<k>} hash tag on every session key", async () => {
    const ns = await f.redis.hget(`${f.prefix}:ctl`, "ns");
    const keys = await f.redis.keys(`${f.prefix}:${ns}:*`);
    const sessionKeys = keys.filter((k) => !/:(sessions|applied|reset|indexes|built|idx:[a-z]+)$/.test(k));
    expect(sessionKeys.length).toBeGreaterThanOrEqual(SESSIONS * 3);
    for (const k of sessionKeys) {
      const m = /^fleet:store:[^:]+:\{s(\d+)\}:s:(proj-\d+):(meta|entries|pos|labels|leafev|approvals|terms)$/.exec(k);
      expect(m, k).not.toBeNull();
      expect(Number(m?.[1])).toBe(shardOf(m?.[2] as string));
    }
  });
});
