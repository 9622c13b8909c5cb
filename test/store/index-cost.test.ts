// The cost of the index queries (PROTOCOL change 44) follows their answer and the shard count, not the
// store: the same 10 sessions answered with 1,000 idle sessions beside them take the same Redis commands as alone.
// Counted black-box with MONITOR on the query connection's address; the store's handler runs
// in-process on its own Redis connection (real redis-server), the sessions written by the projector.
import { type EventBody, type FleetEvent, partitionOf, type StoreOp, subjects } from "@fleet/protocol";
import {
  ALL_SHARDS,
  createNamespaceControl,
  createProjector,
  createSessionCache,
  createSessionRepo,
  type EventRecord,
  handleQuery,
  indexKeys,
  newNamespaceId,
  type QueryContext,
  STORE_SHARDS,
  SYNTHETIC_CONFIG,
} from "@fleet/session-store/testing";
import { type RedisServer, startRedis } from "@fleet/testkit";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const PARTITIONS = 4;
const PREFIX = "fleet:store";
let server: RedisServer;
let writer: Redis;
let reader: Redis;
let monitor: Redis;
let ns: string;
let seq = 0;
let ts = 1_770_000_000_000;

beforeAll(async () => {
  server = await startRedis();
  writer = new Redis(server.url);
  reader = new Redis(server.url);
  monitor = new Redis(server.url);
  ns = newNamespaceId();
  const control = createNamespaceControl(writer, PREFIX);
  await control.markBorn(ns);
  await control.switchTo(ns, 1);
});

afterAll(async () => {
  for (const r of [writer, reader, monitor]) r?.disconnect();
  await server?.stop();
});

/** One session's events: created, named, a run; `hot` leaves the run open with an approval pending. */
function sessionLog(sid: string, name: string, hot: boolean): FleetEvent[] {
  let n = 0;
  const meta = () => ({ v: 1 as const, id: `${sid}-e${++n}`, sessionId: sid, ts: ++ts, producer: "cost-test" });
  const events: FleetEvent[] = [];
  const add = (body: EventBody) => events.push({ ...body, meta: meta() } as FleetEvent);
  add({ type: "session_created", config: SYNTHETIC_CONFIG });
  const id = `${sid}-e${n + 1}`;
  events.push({ type: "session_info", name, entry: { id, parentId: null }, meta: meta() } as FleetEvent);
  events.push({
    type: "label",
    targetId: id,
    label: hot ? "urgent" : "misc",
    entry: { id: `${sid}-l`, parentId: id },
    meta: meta(),
  } as FleetEvent);
  add({ type: "agent_start" });
  add({ type: "tool_approval_requested", toolCallId: `${sid}-c`, toolName: "write", args: { path: "a" } });
  if (!hot) {
    add({ type: "tool_approval_resolved", toolCallId: `${sid}-c`, approved: true });
    add({ type: "agent_end", messages: [] });
  }
  return events;
}

async function project(logs: FleetEvent[][]) {
  const projector = createProjector({
    repo: createSessionRepo(writer, PREFIX),
    cache: createSessionCache(10_000),
    partitions: PARTITIONS,
    readGap: async () => [],
  });
  const records: EventRecord[] = [];
  for (const log of logs) {
    for (const e of log) {
      const sid = e.meta.sessionId;
      records.push({
        seq: ++seq,
        subject: subjects.event(partitionOf(sid, PARTITIONS), sid),
        data: new TextEncoder().encode(JSON.stringify(e)),
        prevSeq: undefined,
      });
    }
  }
  for (let i = 0; i < records.length; i += 500) await projector.applyBatch(ns, records.slice(i, i + 500));
}

const ctx = (): QueryContext => ({
  repo: createSessionRepo(reader, PREFIX),
  cache: createSessionCache(10_000),
  namespaces: createNamespaceControl(reader, PREFIX),
  partitions: PARTITIONS,
  now: Date.now,
  sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
});

/** Runs one query and counts the Redis commands the reader's connection sent meanwhile. */
async function measured(op: StoreOp, body: unknown): Promise<{ reply: Record<string, unknown>; commands: string[] }> {
  const info = await reader.client("INFO");
  const addr = /addr=(\S+)/.exec(String(info))?.[1];
  const seen: string[] = [];
  const feed = await monitor.monitor();
  feed.on("monitor", (_time: string, args: string[], source: string) => {
    if (source === addr) seen.push(String(args[0]).toLowerCase());
  });
  const reply = (await handleQuery(ctx(), op, JSON.stringify(body))) as Record<string, unknown>;
  // A sentinel command on the same connection: once MONITOR shows it, every command before it was shown.
  await reader.echo("cost-test-sentinel");
  const deadline = Date.now() + 10_000;
  while (!seen.includes("echo") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  feed.disconnect();
  return { reply, commands: seen.filter((c) => c !== "echo") };
}

const QUERIES: Array<[StoreOp, unknown]> = [
  ["list_approvals", {}],
  ["list_running", { limit: 50 }],
  ["search_sessions", { q: "needle", limit: 50 }],
  ["search_sessions", { q: "urgent", limit: 50 }],
];

async function measureAll() {
  const out = new Map<string, { answer: unknown; commands: string[] }>();
  for (const [op, body] of QUERIES) {
    const { reply, commands } = await measured(op, body);
    expect(reply.ok).toBe(true);
    out.set(`${op} ${JSON.stringify(body)}`, { answer: reply.approvals ?? reply.sessions, commands });
  }
  return out;
}

describe("index queries cost (PROTOCOL change 44)", () => {
  it("take the same Redis commands for 10 results beside 1,000 idle sessions as beside none", async () => {
    const hot = Array.from({ length: 10 }, (_, i) => sessionLog(`hot-${i}`, `Needle task ${i}`, true));
    await project(hot);
    const alone = await measureAll();

    const idle = Array.from({ length: 1_000 }, (_, i) => sessionLog(`idle-${i}`, `Other job ${i}`, false));
    await project(idle);
    let stored = 0;
    for (const k of ALL_SHARDS) stored += await writer.zcard(indexKeys(PREFIX, ns, k).sessions);
    expect(stored).toBe(1_010);
    const crowded = await measureAll();

    // What the gateway did before: list every session to find the running ones (the count shows the
    // measurement sees the store's size when a query does depend on it).
    const scan = await measured("list_sessions", { limit: 1000 });
    expect(scan.commands.length).toBeGreaterThan(1_000);
    console.log(
      `list_sessions {"limit":1000} (the old approvals scan, first page): ${scan.commands.length} Redis commands with 1,010`,
    );
    for (const [name, a] of alone) {
      const b = crowded.get(name);
      expect((a.answer as unknown[]).length, name).toBe(10);
      expect(b?.answer, name).toEqual(a.answer);
      expect(b?.commands, name).toEqual(a.commands);
      // One namespace read, the index range of each shard, one read per session of the answer.
      expect(a.commands.length, name).toBeLessThanOrEqual(1 + STORE_SHARDS + 10);
      console.log(`${name}: ${a.commands.length} Redis commands with 10 sessions, ${b?.commands.length} with 1,010`);
    }
  }, 120_000);
});
