// `npm run bench:store`: projection and rebuild throughput, get_context latency over NATS, and the
// same-run baselines (raw ordered-consumer read rate, raw Redis pipelined write rate).
// Sizes: BENCH_EVENTS (default 1,000,000), BENCH_SESSIONS (10,000), BENCH_PARTITIONS (16),
// BENCH_GROUPS (1: the stream groups K; the store reads each with one unfiltered consumer),
// BENCH_QUERIES (2,000), BENCH_STORE_INSTANCES (2: the projection is measured with one store instance
// and then with this many splitting the partitions), BENCH_VERIFY=1 (also run `verify` on both
// projections). Starts its own nats-server and redis-server (testkit). The store and the
// rebuild run as their own processes, as deployed (`node --max-semi-space-size=64 --import tsx …`,
// override with BENCH_NODE_FLAGS), so the bench process is only the client.
import { writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import {
  type AgentMessage,
  eventStreamName,
  type FleetEvent,
  groupOf,
  partitionOf,
  storeGroupConsumer,
  subjects,
} from "@fleet/protocol";
import { applyTopology } from "@fleet/runtime";
import { cpuSecondsOf, startNats, startRedis } from "@fleet/testkit";
import { DeliverPolicy, type JetStreamClient, jetstream } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { Redis } from "ioredis";
import { storeConsumerConfig } from "../src/consumer-control.js";
import { appliedKey, controlKey } from "../src/keys.js";
import { createNamespaceControl, newNamespaceId } from "../src/namespace.js";
import { SYNTHETIC_CONFIG, syntheticSession } from "../src/testing/synthetic-session.js";
import { runStoreProcess } from "./store-process.js";

const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 10_000);
const PARTITIONS = Number(process.env.BENCH_PARTITIONS ?? 16);
const GROUPS = Number(process.env.BENCH_GROUPS ?? 1);
const STREAM_NAMES = Array.from({ length: GROUPS }, (_, g) => eventStreamName(g, GROUPS));
const QUERIES = Number(process.env.BENCH_QUERIES ?? 2_000);
const INSTANCES = Number(process.env.BENCH_STORE_INSTANCES ?? 2);
const PER_SESSION = Math.ceil(EVENTS / SESSIONS);
const PREFIX = "bench:store";

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
  const topology = await applyTopology(nc, { partitions: PARTITIONS, groups: GROUPS, leaseTtlMs: 5_000 });
  const js = jetstream(nc);
  const redis = new Redis(redisServer.url, { enableAutoPipelining: true });
  const results: Record<string, number | string> = {};
  out(
    `store bench: ${EVENTS} events over ${SESSIONS} sessions, ${PARTITIONS} partitions in ${GROUPS} stream group(s) (nats-server ${nc.info?.version})`,
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
    const { published, last: lastBySession } = await publishRoundRobin(js, capped, EVENTS);
    const publishMs = performance.now() - t;
    const streamInfos = await Promise.all(STREAM_NAMES.map((name) => topology.jsm.streams.info(name)));
    const streamBytes = streamInfos.reduce((sum, info) => sum + info.state.bytes, 0);
    out(
      `publish: ${published} events in ${(publishMs / 1000).toFixed(1)} s (${rate(published, publishMs)}/s), ${(streamBytes / 1024 ** 2).toFixed(0)} MiB`,
    );
    results.events = published;

    // 2. Baseline: raw ordered-consumer read rate over the same streams (one after the other).
    let natsCpu = cpuSecondsOf(nats.pid);
    const readerCpu = process.cpuUsage();
    t = performance.now();
    let read = 0;
    for (const name of STREAM_NAMES) {
      const oc = await js.consumers.get(name, { deliver_policy: DeliverPolicy.All });
      const msgs = await oc.consume({ max_messages: 10_000 });
      for await (const m of msgs) {
        read++;
        if (m.info.pending === 0) break;
      }
      await msgs.close();
    }
    const readMs = performance.now() - t;
    const readerUsed = process.cpuUsage(readerCpu);
    results.orderedReadPerSec = rate(read, readMs);
    const serverUs = (cpu: number, n: number) => ((cpu * 1e6) / Math.max(1, n)).toFixed(1);
    out(
      `baseline ordered consumer: ${read} messages in ${(readMs / 1000).toFixed(1)} s = ${results.orderedReadPerSec}/s (nats-server ${serverUs(cpuSecondsOf(nats.pid) - natsCpu, read)} µs, the reader ${serverUs((readerUsed.user + readerUsed.system) / 1e6, read)} µs CPU per message)`,
    );

    // 2b. Baseline: what the store's consumers cost the server. One unfiltered durable pull consumer
    // per stream group (ack_policy all, acked every 1,000), as the store reads the log: no filter, so
    // nats-server 2.9 hands each one the next stored message without matching subjects.
    natsCpu = cpuSecondsOf(nats.pid);
    t = performance.now();
    const perGroup = await Promise.all(
      STREAM_NAMES.map(async (stream, g) => {
        const config = { ...storeConsumerConfig(g, 1), durable_name: `bench-raw-g${g}` };
        await topology.jsm.consumers.add(stream, config);
        const consumer = await js.consumers.get(stream, config.durable_name);
        if ((await consumer.info()).num_pending === 0) return 0;
        const messages = await consumer.consume({ max_messages: 5_000 });
        let n = 0;
        for await (const m of messages) {
          n++;
          if (n % 1_000 === 0 || m.info.pending === 0) m.ack();
          if (m.info.pending === 0) break;
        }
        await messages.close();
        await topology.jsm.consumers.delete(stream, config.durable_name);
        return n;
      }),
    );
    const groupRead = perGroup.reduce((a, b) => a + b, 0);
    const groupMs = performance.now() - t;
    results.groupReadPerSec = rate(groupRead, groupMs);
    out(
      `baseline ${GROUPS} unfiltered group consumer(s) (the store's read path): ${groupRead} messages in ${(groupMs / 1000).toFixed(1)} s = ${results.groupReadPerSec}/s (nats-server ${serverUs(cpuSecondsOf(nats.pid) - natsCpu, groupRead)} µs CPU per message)`,
    );

    // 3. Baseline: raw Redis pipelined writes (RPUSH of event-sized values, 1,000 per pipeline).
    const value = "x".repeat(Math.round(streamBytes / Math.max(1, published)));
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

    // 4. Projection: the whole log drained by one store instance, then (into a fresh key prefix, so
    // from the start again) by INSTANCES instances splitting the partitions, as a deployment scales out.
    const lastSeq = streamInfos[0]?.state.last_seq ?? 0;
    const envFor = (prefix: string) => ({
      NATS_URL: nats.url,
      REDIS_URL: redisServer.url,
      FLEET_STORE_PREFIX: prefix,
      FLEET_PARTITIONS: String(PARTITIONS),
      FLEET_STREAM_GROUPS: String(GROUPS),
      FLEET_LEASE_TTL_MS: "5000",
      FLEET_STORE_CACHE_ENTRIES: "5000000",
      LOG_LEVEL: "info",
    });
    const storeEnv = envFor(PREFIX);
    // Drained = every partition's applied mark in the prefix's active namespace has reached the
    // partition's last event (a fresh prefix resets the consumers when its leases are taken).
    const partitionLast = new Map<number, number>();
    for (const [sid, seq] of lastBySession) {
      const p = partitionOf(sid, PARTITIONS);
      partitionLast.set(p, Math.max(partitionLast.get(p) ?? 0, seq));
    }
    const drained = async (prefix: string) => {
      const ns = await redis.hget(controlKey(prefix), "ns");
      if (!ns) return false;
      const applied = await redis.hgetall(appliedKey(prefix, ns));
      return [...partitionLast].every(([p, seq]) => Number(applied[String(p)] ?? 0) >= seq);
    };
    const project = async (instances: number, prefix: string) => {
      // Live projection from sequence 1 into an active namespace, as before the store healed itself:
      // without one, the first instance would rebuild the fresh prefix from the log on its own.
      const control = createNamespaceControl(redis, prefix);
      const ns = newNamespaceId();
      await control.markBorn(ns);
      await control.switchTo(ns, 1);
      // Timed from the first lease acquired: process start-up (tsx compiling the sources) is excluded.
      const stores = Array.from({ length: instances }, (_, i) =>
        runStoreProcess("main", [], { ...envFor(prefix), FLEET_WORKER_ID: `bench-${i}` }, /"evt":"lease_acquired"/),
      );
      await Promise.race(stores.map((s) => s.started));
      const started = performance.now();
      const cpuAtStart = stores.map((s) => s.cpuSeconds());
      const serversAtStart = [cpuSecondsOf(nats.pid), cpuSecondsOf(redisServer.pid)];
      let lastReport = performance.now();
      while (!(await drained(prefix))) {
        await new Promise((r) => setTimeout(r, 100));
        if (performance.now() - lastReport > 10_000) {
          lastReport = performance.now();
          const info = await topology.jsm.consumers.info(STREAM_NAMES[0] as string, storeGroupConsumer(0).durable_name);
          out(`  projecting… g0 delivered ${info.delivered.stream_seq}/${lastSeq}`);
        }
      }
      const ms = performance.now() - started;
      const cpu = stores.reduce((sum, s, i) => sum + s.cpuSeconds() - (cpuAtStart[i] ?? 0), 0);
      const natsCpu = cpuSecondsOf(nats.pid) - (serversAtStart[0] ?? 0);
      const redisCpu = cpuSecondsOf(redisServer.pid) - (serversAtStart[1] ?? 0);
      const leaseLosses = stores.reduce((sum, s) => sum + (s.output().match(/"evt":"lease_lost"/g) ?? []).length, 0);
      if (process.env.BENCH_STORE_LOG)
        writeFileSync(process.env.BENCH_STORE_LOG, stores.map((s) => s.output()).join(""));
      await Promise.all(stores.map((s) => s.stop()));
      return { ms, cpu, natsCpu, redisCpu, leaseLosses };
    };
    const report = (
      label: string,
      r: { ms: number; cpu: number; natsCpu: number; redisCpu: number; leaseLosses: number },
    ) => {
      const perSec = rate(published, r.ms);
      out(
        `projection, ${label}: ${published} events in ${(r.ms / 1000).toFixed(1)} s = ${perSec} events/s (target >= 50000)`,
      );
      out(
        `  store CPU after start-up: ${r.cpu.toFixed(1)} s = ${rate(published, r.cpu * 1000)} events per CPU-second (nats-server ${r.natsCpu.toFixed(1)} s, redis-server ${r.redisCpu.toFixed(1)} s)${r.leaseLosses > 0 ? `; ${r.leaseLosses} group leases lost` : ""}`,
      );
      return perSec;
    };
    const one = await project(1, PREFIX);
    results.projectionOneInstanceEventsPerSec = report("1 instance", one);
    results.projectionEventsPerCpuSecond = rate(published, one.cpu * 1000);
    let leasesLost = one.leaseLosses;
    if (INSTANCES > 1) {
      const many = await project(INSTANCES, `${PREFIX}:x${INSTANCES}`);
      results.projectionEventsPerSec = report(`${INSTANCES} instances`, many);
      leasesLost += many.leaseLosses;
    } else {
      results.projectionEventsPerSec = results.projectionOneInstanceEventsPerSec;
    }
    results.leasesLost = leasesLost;
    out(`leases lost: ${leasesLost}`);
    // The projection (one instance) against the plain read of the same streams in this run.
    const readPath = Number(results.projectionOneInstanceEventsPerSec) / Math.max(1, Number(results.orderedReadPerSec));
    results.projectionVsReadPath = Number(readPath.toFixed(2));
    out(`projection vs its read path: ${readPath.toFixed(2)}x (target >= 0.70)`);
    // What the target rate needs at this run's CPU per event: the cores of the three processes, and
    // the one store process (one thread; with K = 1 a second instance has no group to take).
    const target = 0.7 * Number(results.orderedReadPerSec);
    const usPer = (cpu: number) => (cpu * 1e6) / Math.max(1, published);
    const [storeUs, natsUs, redisUs] = [usPer(one.cpu), usPer(one.natsCpu), usPer(one.redisCpu)];
    out(
      `  the target, ${Math.round(target)} events/s, at this run's CPU per event (store ${storeUs.toFixed(1)} µs, nats-server ${natsUs.toFixed(1)} µs, redis-server ${redisUs.toFixed(1)} µs) needs ${((target * (storeUs + natsUs + redisUs)) / 1e6).toFixed(2)} cores (this machine has ${availableParallelism()}), ${((target * storeUs) / 1e6).toFixed(2)} of them in the store's one thread; the two servers alone ${((target * (natsUs + redisUs)) / 1e6).toFixed(2)}`,
    );

    // Optional: check the projection made under load (lease churn included) against a replay.
    if (process.env.BENCH_VERIFY) {
      for (const prefix of INSTANCES > 1 ? [PREFIX, `${PREFIX}:x${INSTANCES}`] : [PREFIX]) {
        const verifyRun = runStoreProcess("cli", ["verify", "--wait-ms", "0"], envFor(prefix), /verify: /);
        await verifyRun.started;
        const code = await verifyRun.exited;
        out(`verify ${prefix}: exit ${code}, ${/verify: .*/.exec(verifyRun.output())?.[0]}`);
      }
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
    const bigStream = eventStreamName(groupOf(partitionOf("big-1", PARTITIONS), GROUPS), GROUPS);
    const bigLast = (await topology.jsm.streams.info(bigStream)).state.last_seq;
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
