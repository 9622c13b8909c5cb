// `npm run bench:store`: projection and rebuild throughput, get_context latency over NATS, and the
// same-run baselines (raw ordered-consumer read rate, raw Redis pipelined write rate).
// Sizes: BENCH_EVENTS (default 1,000,000), BENCH_SESSIONS (10,000), BENCH_PARTITIONS (16),
// BENCH_QUERIES (2,000), BENCH_VERIFY=1 (also run `verify` after the projection). Starts its own nats-server and redis-server (testkit). The store and the
// rebuild run as their own processes, as deployed (`node --max-semi-space-size=64 --import tsx …`,
// override with BENCH_NODE_FLAGS), so the bench process is only the client.
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import {
  type AgentMessage,
  type FleetEvent,
  partitionOf,
  STREAMS,
  storeEventConsumer,
  subjects,
} from "@fleet/protocol";
import { applyTopology } from "@fleet/runtime";
import { startNats, startRedis } from "@fleet/testkit";
import { DeliverPolicy, type JetStreamClient, jetstream } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { Redis } from "ioredis";
import { SYNTHETIC_CONFIG, syntheticSession } from "../src/testing/synthetic-session.js";

const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 10_000);
const PARTITIONS = Number(process.env.BENCH_PARTITIONS ?? 16);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 2_000);
const PER_SESSION = Math.ceil(EVENTS / SESSIONS);
const PREFIX = "bench:store";
const NODE_FLAGS = (process.env.BENCH_NODE_FLAGS ?? "--max-semi-space-size=64").split(" ").filter(Boolean);
const SRC = resolve(import.meta.dirname, "../src");

/** Runs `src/<script>.ts` in its own node process; resolves once `ready` matches its output (or it exits). */
function runStoreProcess(script: "main" | "cli", args: string[], env: Record<string, string>, ready: RegExp) {
  const child: ChildProcess = spawn(
    process.execPath,
    [...NODE_FLAGS, "--import", "tsx", "--conditions=@fleet/source", resolve(SRC, `${script}.ts`), ...args],
    { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } },
  );
  let output = "";
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  const started = new Promise<void>((resolveReady, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (ready.test(output)) resolveReady();
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    void exited.then((code) =>
      ready.test(output) ? resolveReady() : reject(new Error(`${script} exited ${code}: ${output}`)),
    );
  });
  return {
    started,
    exited,
    output: () => output,
    /** CPU seconds (user + system) the process used so far, from /proc (Linux). */
    cpuSeconds: () => {
      try {
        const fields = readFileSync(`/proc/${child.pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
        return (Number(fields[11]) + Number(fields[12])) / 100;
      } catch {
        return Number.NaN;
      }
    },
    stop: async () => {
      if (child.exitCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}

const out = (line: string) => process.stdout.write(`${line}\n`);
const rate = (n: number, ms: number) => Math.round((n / ms) * 1000);
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number;
};

/** Appends with msgID and expect.lastSubjectSequence, like the loop; at most one in flight per session. */
async function publishRoundRobin(js: JetStreamClient, sessions: Array<Iterator<FleetEvent>>, limit: number) {
  const last = new Map<string, number>();
  const encoder = new TextEncoder();
  let published = 0;
  let live = sessions.map((it, i) => ({ it, i }));
  while (live.length > 0 && published < limit) {
    const round = live.slice(0, limit - published);
    const results = await Promise.all(
      round.map(async ({ it }) => {
        const next = it.next();
        if (next.done) return false;
        const e = next.value;
        const sid = e.meta.sessionId;
        const ack = await js.publish(
          subjects.event(partitionOf(sid, PARTITIONS), sid),
          encoder.encode(JSON.stringify(e)),
          {
            msgID: e.meta.id,
            expect: { lastSubjectSequence: last.get(sid) ?? 0 },
            timeout: 30_000,
          },
        );
        last.set(sid, ack.seq);
        return true;
      }),
    );
    published += results.filter(Boolean).length;
    live = round.filter((_, k) => results[k]);
  }
  return { published, last };
}

/** One session of exactly `entries` message entries in `branches` branches off a short trunk. */
function* bigSession(sid: string, entries: number, branches: number): Generator<FleetEvent> {
  let ts = 1_764_450_000_000;
  let n = 0;
  let leaf: string | null = null;
  const meta = () => ({ v: 1 as const, id: `${sid}-e${++n}`, sessionId: sid, ts: ++ts, producer: "bench" });
  yield { type: "session_created", config: SYNTHETIC_CONFIG, meta: meta() };
  const trunk: string[] = [];
  const trunkLength = 100;
  const perBranch = Math.floor((entries - trunkLength) / branches);
  const message = (i: number): AgentMessage =>
    i % 2 === 0
      ? { role: "user", content: [{ type: "text", text: `question ${i}` }], timestamp: ts }
      : {
          role: "assistant",
          content: [{ type: "text", text: `answer ${i}` }],
          api: "anthropic-messages",
          provider: "anthropic",
          model: "claude-sonnet-5",
          usage: {
            input: 1,
            output: 1,
            cacheRead: 0,
            cacheWrite: 0,
            totalTokens: 2,
            cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
          },
          stopReason: "stop",
          timestamp: ts,
        };
  let made = 0;
  const append = (): FleetEvent => {
    const m = meta();
    const e: FleetEvent = {
      type: "message_end",
      message: message(made++),
      entry: { id: m.id, parentId: leaf },
      meta: m,
    };
    leaf = m.id;
    return e;
  };
  for (let i = 0; i < trunkLength; i++) {
    const e = append();
    trunk.push(e.meta.id);
    yield e;
  }
  for (let b = 0; b < branches; b++) {
    const from = trunk[Math.floor(((b + 1) * trunkLength) / (branches + 1))] as string;
    yield { type: "leaf", targetId: from, meta: meta() };
    leaf = from;
    const count = b === branches - 1 ? entries - trunkLength - perBranch * (branches - 1) : perBranch;
    for (let i = 0; i < count; i++) yield append();
  }
}

async function main() {
  const nats = await startNats({ jetstream: { maxFileStore: 20 * 1024 ** 3, maxMemoryStore: 1024 ** 3 } });
  const redisServer = await startRedis();
  const nc = await connect({ servers: nats.url });
  const topology = await applyTopology(nc, { partitions: PARTITIONS, leaseTtlMs: 5_000 });
  const js = jetstream(nc);
  const redis = new Redis(redisServer.url, { enableAutoPipelining: true });
  const results: Record<string, number | string> = {};
  out(
    `store bench: ${EVENTS} events over ${SESSIONS} sessions, ${PARTITIONS} partitions (nats-server ${nc.info?.version})`,
  );
  try {
    // 1. Publish the synthetic log (round-robin over sessions: every batch touches many sessions).
    let t = performance.now();
    const gens = Array.from({ length: SESSIONS }, (_, i) =>
      syntheticSession({ sessionId: `b-${i}`, seed: i + 1, runs: 1_000_000, streaming: true, textChars: 60 }),
    );
    const capped = gens.map((g) => {
      let k = 0;
      return {
        next: () => (k++ < PER_SESSION ? g.next() : { done: true as const, value: undefined }),
      } as Iterator<FleetEvent>;
    });
    const { published } = await publishRoundRobin(js, capped, EVENTS);
    const publishMs = performance.now() - t;
    const streamInfo = await topology.jsm.streams.info(STREAMS.events.name);
    out(
      `publish: ${published} events in ${(publishMs / 1000).toFixed(1)} s (${rate(published, publishMs)}/s), ${(streamInfo.state.bytes / 1024 ** 2).toFixed(0)} MiB`,
    );
    results.events = published;

    // 2. Baseline: raw ordered-consumer read rate over the same stream.
    t = performance.now();
    const oc = await js.consumers.get(STREAMS.events.name, {
      filter_subjects: subjects.eventsAll,
      deliver_policy: DeliverPolicy.All,
    });
    const msgs = await oc.consume({ max_messages: 10_000 });
    let read = 0;
    for await (const m of msgs) {
      read++;
      if (m.info.pending === 0) break;
    }
    await msgs.close();
    const readMs = performance.now() - t;
    results.orderedReadPerSec = rate(read, readMs);
    out(
      `baseline ordered consumer: ${read} messages in ${(readMs / 1000).toFixed(1)} s = ${results.orderedReadPerSec}/s`,
    );

    // 3. Baseline: raw Redis pipelined writes (RPUSH of event-sized values, 1,000 per pipeline).
    const value = "x".repeat(Math.round(streamInfo.state.bytes / Math.max(1, published)));
    const writes = Math.min(published, 1_000_000);
    t = performance.now();
    for (let i = 0; i < writes; i += 1_000) {
      const p = redis.pipeline();
      for (let j = i; j < Math.min(writes, i + 1_000); j++) p.rpush(`raw:{s${j % SESSIONS}}`, value);
      await p.exec();
    }
    const writeMs = performance.now() - t;
    results.redisPipelinedWritesPerSec = rate(writes, writeMs);
    out(
      `baseline redis pipelined RPUSH (${value.length} B): ${writes} in ${(writeMs / 1000).toFixed(1)} s = ${results.redisPipelinedWritesPerSec}/s`,
    );
    for (let i = 0; i < SESSIONS; i += 1_000) {
      await redis.del(...Array.from({ length: Math.min(1_000, SESSIONS - i) }, (_, k) => `raw:{s${i + k}}`));
    }

    // 4. Projection: one store instance drains the whole log.
    const lastSeq = streamInfo.state.last_seq;
    const storeEnv = {
      NATS_URL: nats.url,
      REDIS_URL: redisServer.url,
      FLEET_STORE_PREFIX: PREFIX,
      FLEET_PARTITIONS: String(PARTITIONS),
      FLEET_LEASE_TTL_MS: "5000",
      FLEET_STORE_CACHE_ENTRIES: "5000000",
      LOG_LEVEL: "info",
    };
    // Timed from the first lease acquired: process start-up (tsx compiling the sources) is excluded.
    const store = runStoreProcess("main", [], { ...storeEnv, FLEET_WORKER_ID: "bench" }, /"evt":"lease_acquired"/);
    await store.started;
    t = performance.now();
    const cpuAtStart = store.cpuSeconds();
    const drained = async () => {
      for (let p = 0; p < PARTITIONS; p++) {
        const info = await topology.jsm.consumers
          .info(STREAMS.events.name, storeEventConsumer(p).durable_name)
          .catch(() => null);
        if (!info || info.num_pending + info.num_ack_pending > 0) return false;
      }
      return true;
    };
    let lastReport = performance.now();
    while (!(await drained())) {
      await new Promise((r) => setTimeout(r, 100));
      if (performance.now() - lastReport > 10_000) {
        lastReport = performance.now();
        const info = await topology.jsm.consumers.info(STREAMS.events.name, storeEventConsumer(0).durable_name);
        out(`  projecting… p0 delivered ${info.delivered.stream_seq}/${lastSeq}`);
      }
    }
    const projectMs = performance.now() - t;
    results.projectionEventsPerSec = rate(published, projectMs);
    out(
      `projection: ${published} events in ${(projectMs / 1000).toFixed(1)} s = ${results.projectionEventsPerSec} events/s (target >= 50000)`,
    );
    const cpu = store.cpuSeconds() - cpuAtStart;
    results.projectionEventsPerCpuSecond = rate(published, cpu * 1000);
    out(
      `  store process CPU after start-up: ${cpu.toFixed(1)} s = ${results.projectionEventsPerCpuSecond} events per CPU-second`,
    );
    if (process.env.BENCH_STORE_LOG) writeFileSync(process.env.BENCH_STORE_LOG, store.output());
    const leaseLosses = (store.output().match(/"evt":"lease_lost"/g) ?? []).length;
    if (leaseLosses > 0) out(`  (the store lost ${leaseLosses} partition leases while projecting)`);
    await store.stop();

    // Optional: check the projection made under load (lease churn included) against a replay.
    if (process.env.BENCH_VERIFY) {
      const verifyRun = runStoreProcess("cli", ["verify", "--wait-ms", "0"], storeEnv, /verify: /);
      await verifyRun.started;
      const code = await verifyRun.exited;
      out(`verify: exit ${code}, ${/verify: .*/.exec(verifyRun.output())?.[0]}`);
    }

    // 5. Rebuild: the same events into a fresh namespace, then the switch (the CLI, as an operator runs it).
    const rebuildRun = runStoreProcess("cli", ["rebuild", "--grace-ms", "0", "--keep-old"], storeEnv, /rebuild: /);
    await rebuildRun.started;
    await rebuildRun.exited;
    const m = /rebuild: namespace \S+ replaces \S+; (\d+) events through seq \d+ in (\d+) ms/.exec(rebuildRun.output());
    if (!m) throw new Error(`rebuild failed: ${rebuildRun.output()}`);
    const [rebuiltEvents, rebuildMs] = [Number(m[1]), Number(m[2])];
    results.rebuildMs = rebuildMs;
    results.rebuildEventsPerSec = rate(rebuiltEvents, rebuildMs);
    out(
      `rebuild: ${rebuiltEvents} events in ${(rebuildMs / 1000).toFixed(1)} s = ${results.rebuildEventsPerSec} events/s`,
    );

    // 6. get_context over NATS on a session of 10,000 entries in 20 branches.
    const big = bigSession("big-1", 10_000, 20);
    await publishRoundRobin(js, [big], Number.MAX_SAFE_INTEGER);
    const queryStore = runStoreProcess(
      "main",
      [],
      { ...storeEnv, FLEET_WORKER_ID: "bench-q" },
      /"evt":"store_started"/,
    );
    await queryStore.started;
    const bigLast = (await topology.jsm.streams.info(STREAMS.events.name)).state.last_seq;
    const ask = async (payload: unknown) => {
      const started = performance.now();
      const reply = await nc.request(subjects.store("get_context"), JSON.stringify(payload), { timeout: 30_000 });
      const body = JSON.parse(new TextDecoder().decode(reply.data)) as {
        ok: boolean;
        messages?: unknown[];
        error?: string;
      };
      if (!body.ok) throw new Error(`get_context failed: ${body.error}`);
      return { ms: performance.now() - started, messages: body.messages?.length ?? 0, bytes: reply.data.byteLength };
    };
    const first = await ask({ sessionId: "big-1", minSeq: bigLast, timeoutMs: 30_000 });
    out(
      `get_context cold (first read, waits for the projection): ${first.ms.toFixed(1)} ms, ${first.messages} messages, ${(first.bytes / 1024).toFixed(0)} KiB`,
    );
    for (let i = 0; i < 100; i++) await ask({ sessionId: "big-1" });
    const lat: number[] = [];
    for (let i = 0; i < QUERIES; i++) lat.push((await ask({ sessionId: "big-1" })).ms);
    results.getContextP50Ms = Number(pct(lat, 50).toFixed(2));
    results.getContextP99Ms = Number(pct(lat, 99).toFixed(2));
    out(
      `get_context (leaf, ${QUERIES} sequential requests): p50 ${results.getContextP50Ms} ms, p99 ${results.getContextP99Ms} ms (target p50 <= 5)`,
    );
    await queryStore.stop();
    out(`RESULT ${JSON.stringify(results)}`);
  } finally {
    await nc.close().catch(() => undefined);
    redis.disconnect();
    await redisServer.stop();
    await nats.stop();
  }
}

await main();
process.exit(0);
