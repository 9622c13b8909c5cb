// A 3-node NATS cluster with every stream and bucket at 3 replicas. During a run (loop worker, tool
// runner, session store, fake Anthropic through the real SDK) the node leading FLEET_EVENTS is
// SIGKILLed. Appends retry with the same msgID through the election: the run finishes, no event is
// lost or doubled, and the store equals the log.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAnthropicStreamFn, DEFAULT_TOOL_PICKUP_MS, type LoopWorker } from "@fleet/loop";
import { decodeEvent, type FleetEvent, foldSessionTreeEvents, partitionOf, STREAMS, subjects } from "@fleet/protocol";
import { applyTopology, connectNats, createLogger } from "@fleet/runtime";
import { type StoreService, startStoreService } from "@fleet/session-store";
import {
  type FakeAnthropic,
  fakeReply,
  fakeToolUse,
  type NatsCluster,
  type RedisServer,
  startFakeAnthropic,
  startNatsCluster,
  startRedis,
} from "@fleet/testkit";
import { createToolRunner, defineTool, type ToolRunner } from "@fleet/tools";
import { DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { commander, startTestWorker } from "../support/loop-harness.js";

const PARTITIONS = 4;
const TOOL_CALLS = 6;
const silent = createLogger("cluster-test", { level: "silent" });

const pause = defineTool({
  name: "pause",
  description: "waits ms milliseconds, then echoes its tag",
  parameters: z.object({ tag: z.string(), ms: z.number().int().nonnegative() }),
  async execute(args) {
    await new Promise((r) => setTimeout(r, args.ms));
    return { content: [{ type: "text", text: `done ${args.tag}` }] };
  },
});

let cluster: NatsCluster;
let redis: RedisServer;
let fake: FakeAnthropic;
let workspace: string;
let nc: NatsConnection;
let runnerNc: NatsConnection;
let runner: ToolRunner;
let worker: LoopWorker;
let workerNc: NatsConnection;
let store: StoreService;

beforeAll(async () => {
  cluster = await startNatsCluster();
  redis = await startRedis();
  fake = await startFakeAnthropic();
  workspace = mkdtempSync(join(tmpdir(), "fleet-cluster-ws-"));
  const url = cluster.urls.join(",");
  nc = await connectNats({ url, name: "cluster-test" });
  await applyTopology(nc, { partitions: PARTITIONS, leaseTtlMs: 10_000, replicas: 3 });
  runnerNc = await connectNats({ url, name: "cluster-runner" });
  runner = createToolRunner({
    nc: runnerNc,
    tools: [pause],
    workspaceRoot: workspace,
    updateIntervalMs: 0,
    logger: silent,
  });
  const started = await runner.start();
  if (!started.ok) throw new Error(`tool runner did not start: ${JSON.stringify(started)}`);
  store = await startStoreService({
    natsUrl: url,
    redisUrl: redis.url,
    prefix: "cluster:store",
    partitions: PARTITIONS,
    leaseTtlMs: 10_000,
    replicas: 3,
    opsPort: 0,
    cacheEntries: 100_000,
    maxBatch: 500,
    logger: silent,
  });
  const w = await startTestWorker({
    url,
    partitions: PARTITIONS,
    leaseTtlMs: 10_000,
    providers: { anthropic: createAnthropicStreamFn({ apiKey: "sk-test", baseURL: fake.url, maxRetries: 5 }) },
    defaultProvider: "anthropic",
    coalesceMs: 25,
    // The production pickup time: a call dispatched during the election is picked up once it ends
    // (about 6 s on 2.9.10), later than the harness's short default.
    toolPickupMs: DEFAULT_TOOL_PICKUP_MS,
  });
  worker = w.worker;
  workerNc = w.nc;
}, 120_000);

afterAll(async () => {
  await worker?.stop().catch(() => undefined);
  await store?.stop().catch(() => undefined);
  await runner?.stop({ graceMs: 0 }).catch(() => undefined);
  for (const c of [workerNc, runnerNc, nc]) await c?.close().catch(() => undefined);
  await fake?.stop();
  await redis?.stop();
  await cluster?.stop();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
}, 60_000);

/** Tool results in the request so far decide the reply: a new `pause` call until TOOL_CALLS, then text. */
function scriptRun() {
  const reply = (request: { rawBody: unknown }) => {
    const body = request.rawBody as { messages?: Array<{ content?: unknown }> };
    const results = (body.messages ?? [])
      .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
      .filter((b: { type?: string }) => b.type === "tool_result").length;
    return results < TOOL_CALLS
      ? fakeReply([fakeToolUse("pause", { tag: `t${results}`, ms: 400 }, { id: `toolu_c${results}` })], {
          stopReason: "tool_use",
        })
      : fakeReply("all done");
  };
  fake.script(...Array.from({ length: TOOL_CALLS * 3 }, () => reply));
}

/** Retries `read` while the cluster elects leaders (JetStream API calls time out meanwhile). */
async function retrying<T>(what: string, read: () => Promise<T | undefined>, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await read();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out waiting for ${what}: ${String(last)}`);
}

/** Every stored record of a session: its event, stream sequence and expected-last-subject-sequence header. */
async function storedRecords(sessionId: string) {
  const js = jetstream(nc);
  const subject = subjects.event(partitionOf(sessionId, PARTITIONS), sessionId);
  const jsm = await jetstreamManager(nc);
  const last = (await jsm.streams.getMessage(STREAMS.events.name, { last_by_subj: subject }))?.seq ?? 0;
  const consumer = await js.consumers.get(STREAMS.events.name, {
    filter_subjects: subject,
    deliver_policy: DeliverPolicy.All,
  });
  const out: Array<{ seq: number; prevSeq: number; event: FleetEvent }> = [];
  const messages = await consumer.consume();
  for await (const m of messages) {
    const decoded = decodeEvent(m.data);
    if (!decoded.ok) throw new Error(`undecodable event at ${m.seq}`);
    out.push({
      seq: m.seq,
      prevSeq: Number(m.headers?.get("Nats-Expected-Last-Subject-Sequence") ?? -1),
      event: decoded.value,
    });
    if (m.seq >= last) break;
  }
  await messages.close();
  return out;
}

describe("a 3-node cluster loses the FLEET_EVENTS leader during a run", () => {
  it("the run finishes with no event lost or doubled, and the store equals the log", async () => {
    scriptRun();
    const cmd = commander(workerNc, PARTITIONS);
    const sid = "cluster-1";
    await cmd.send(sid, { type: "prompt", text: "do the pauses" });
    await cmd.waitFor(sid, (evs) => evs.some((e) => e.type === "tool_execution_start"), 30_000);

    const jsm = await jetstreamManager(nc);
    const leader = (await jsm.streams.info(STREAMS.events.name)).cluster?.leader;
    const index = cluster.nodes.findIndex((n) => n.name === leader);
    expect(index).toBeGreaterThanOrEqual(0);
    await cluster.kill(index);
    const killedAt = Date.now();

    await retrying("agent_end", async () =>
      (await cmd.events(sid)).some((e) => e.type === "agent_end") ? true : undefined,
    );
    const newLeader = await retrying(
      "a new leader",
      async () => (await jsm.streams.info(STREAMS.events.name)).cluster?.leader,
    );
    expect(newLeader).not.toBe(leader);
    const records = await retrying("the session's records", () => storedRecords(sid));
    const events = records.map((r) => r.event);

    // None doubled: unique event ids; a gapless chain of expected-last-subject-sequences.
    const ids = events.map((e) => e.meta.id);
    expect(new Set(ids).size).toBe(ids.length);
    records.forEach((r, i) => {
      expect(r.prevSeq).toBe(i === 0 ? 0 : (records[i - 1] as { seq: number }).seq);
    });
    // None lost: one accepted prompt, one run with every tool call started and ended once, one end.
    const count = (type: string) => events.filter((e) => e.type === type).length;
    expect(count("command_accepted")).toBe(1);
    expect(count("agent_start")).toBe(1);
    expect(count("agent_end")).toBe(1);
    expect(count("tool_execution_start")).toBe(TOOL_CALLS);
    expect(count("tool_execution_end")).toBe(TOOL_CALLS);
    const ends = events.filter((e) => e.type === "tool_execution_end");
    // Every call ran: no error result (the list names any, with its text).
    expect(ends.filter((e) => e.type === "tool_execution_end" && e.isError).map((e) => JSON.stringify(e))).toEqual([]);
    const last = events.filter((e) => e.type === "message_end").at(-1);
    expect(JSON.stringify(last)).toContain("all done");

    // The store (its streams and buckets at 3 replicas too) equals a fresh fold of the log.
    const expected = foldSessionTreeEvents(events);
    const lastSeq = (records.at(-1) as { seq: number }).seq;
    let tree: { entries: unknown; leafId: unknown } | undefined;
    for (let i = 0; i < 100 && !tree; i++) {
      const reply = await nc.request(subjects.store("get_tree"), JSON.stringify({ sessionId: sid, minSeq: lastSeq }), {
        timeout: 10_000,
      });
      const body = JSON.parse(new TextDecoder().decode(reply.data)) as {
        ok: boolean;
        entries: unknown;
        leafId: unknown;
      };
      if (body.ok) tree = body;
      else await new Promise((r) => setTimeout(r, 200));
    }
    expect(tree?.entries).toEqual(expected.entries);
    expect(tree?.leafId).toEqual(expected.leafId);
    process.stdout.write(
      `cluster: killed ${leader}, new leader ${newLeader}, run ended ${Date.now() - killedAt} ms later, ${events.length} events\n`,
    );
  }, 180_000);
});
