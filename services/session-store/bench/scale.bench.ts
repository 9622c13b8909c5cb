// `npm run bench:scale`: what the log's readers cost the server per stored event (issue 24, item 6).
// For each partition count P (BENCH_PARTITIONS, default 16,256,1024), on a fresh nats-server whose
// event stream holds BENCH_FILL small events (default 1,000,000) of 10,000 ended sessions:
// - the fleet's readers: one session-store process (its consumers, as deployed) and BENCH_WATCHERS
//   SDK watchers (`FleetClient.events(sid, { from: "new" })`, default 1,000), while BENCH_SESSIONS
//   new sessions (default 1,000, the watched ones) append BENCH_PER_SESSION events each (default 20);
// - the same run's baseline: one unfiltered reader (an ordered consumer without a filter) while as
//   many new sessions append as many events.
// Server CPU per event = the nats-server process's CPU time (/proc, as `/varz` reports it) over the
// phase, divided by the events appended in it; beside it, the messages the server received per event
// (`/varz` in_msgs: the append, acks, pulls and every direct get). Prints one line per P and then
// `server cpu per event at P=1024 with 1000 watchers vs one reader: X.XXx` (target <= 1.5x).
import { setMaxListeners } from "node:events";
import { FleetClient } from "@fleet/client";
import { eventStreamSpec, partitionOf, STREAMS } from "@fleet/protocol";
import { applyTopology, createStreamPublisher } from "@fleet/runtime";
import { cpuSecondsOf, startNats, startRedis } from "@fleet/testkit";
import { DeliverPolicy, jetstream, jetstreamManager, type StreamConfig } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Redis } from "ioredis";
import { appliedKey, controlKey } from "../src/keys.js";
import { createNamespaceControl, newNamespaceId } from "../src/namespace.js";
import { append, roundRobin } from "./appends.js";
import { runStoreProcess } from "./store-process.js";

const FILL = Number(process.env.BENCH_FILL ?? 1_000_000);
const FILL_SESSIONS = 10_000;
const WATCHERS = Number(process.env.BENCH_WATCHERS ?? 1_000);
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 1_000);
const PER_SESSION = Number(process.env.BENCH_PER_SESSION ?? 20);
const PARTITION_COUNTS = (process.env.BENCH_PARTITIONS ?? "16,256,1024").split(",").map(Number);
const PREFIX = "bench:scale";
/**
 * BENCH_REPUBLISH=0 makes the event stream as a log from before change 67 has it (no republish), so
 * the watchers take the doorbell path: a direct get per event and watching connection.
 */
const REPUBLISH = process.env.BENCH_REPUBLISH !== "0";

const out = (line: string) => process.stdout.write(`${line}\n`);

async function until(cond: () => Promise<boolean> | boolean, timeoutMs: number, what: string) {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface PhaseResult {
  events: number;
  natsCpuSeconds: number;
  /** Messages the server received during the phase (`/varz` in_msgs). */
  inMsgs: number;
  ms: number;
  /** The server's CPU seconds per second with the phase's readers attached, before anything is appended. */
  idle: number;
}

/** The server's CPU seconds per second over `ms` in which nothing is appended. */
async function idleCpuRate(pid: number | undefined, ms: number): Promise<number> {
  const cpu = cpuSecondsOf(pid);
  const t = performance.now();
  await new Promise((r) => setTimeout(r, ms));
  return ((cpuSecondsOf(pid) - cpu) * 1000) / (performance.now() - t);
}

/** The server's count of messages received (`/varz` in_msgs). */
async function inMsgsOf(monitorUrl: string | undefined): Promise<number> {
  const varz = (await (await fetch(`${monitorUrl}/varz`)).json()) as { in_msgs: number };
  return varz.in_msgs;
}

const describe = (r: PhaseResult) =>
  `${usPerEvent(r).toFixed(1)} µs server CPU and ${(r.inMsgs / r.events).toFixed(2)} messages in per event (${(r.ms / 1000).toFixed(1)} s; idle before it ${(r.idle * 1000).toFixed(1)} ms CPU/s)`;

const usPerEvent = (r: PhaseResult) => (r.natsCpuSeconds * 1e6) / r.events;

async function measureP(partitions: number): Promise<{ readers: PhaseResult; baseline: PhaseResult }> {
  const nats = await startNats({
    monitor: true,
    jetstream: { maxFileStore: 20 * 1024 ** 3, maxMemoryStore: 1024 ** 3 },
  });
  const redisServer = await startRedis();
  const nc: NatsConnection = await connect({ servers: nats.url, noAsyncTraces: true });
  const redis = new Redis(redisServer.url, { enableAutoPipelining: true });
  const store: Array<ReturnType<typeof runStoreProcess>> = [];
  let client: FleetClient | undefined;
  try {
    if (!REPUBLISH) {
      const { republish: _, ...old } = eventStreamSpec(0, { partitions, groups: 1 });
      await (await jetstreamManager(nc)).streams.add(old as unknown as StreamConfig);
    }
    const topology = await applyTopology(nc, { partitions, leaseTtlMs: 5_000 });
    const publisher = createStreamPublisher(nc);
    // 1. History: FILL events of ended sessions.
    let t = performance.now();
    const fillIds = Array.from({ length: FILL_SESSIONS }, (_, i) => `hist-${i}`);
    await append(publisher, roundRobin(fillIds, Math.ceil(FILL / FILL_SESSIONS), 20), partitions, 2_048);
    const filled = await topology.jsm.streams.info(STREAMS.events.name);
    out(
      `  P=${partitions}: ${filled.state.messages} events stored (${(filled.state.bytes / 1024 ** 2).toFixed(0)} MiB) in ${((performance.now() - t) / 1000).toFixed(1)} s`,
    );

    // 2. The fleet's readers: the store from the log's end (its namespace starts after the history,
    // so it reads only what is appended now), and WATCHERS SDK watchers of the new sessions.
    const control = createNamespaceControl(redis, PREFIX);
    const ns = newNamespaceId();
    await control.markBorn(ns);
    await control.switchTo(ns, filled.state.last_seq + 1);
    store.push(
      runStoreProcess(
        "main",
        [],
        {
          NATS_URL: nats.url,
          REDIS_URL: redisServer.url,
          FLEET_STORE_PREFIX: PREFIX,
          FLEET_PARTITIONS: String(partitions),
          FLEET_LEASE_TTL_MS: "5000",
          LOG_LEVEL: "info",
        },
        /"evt":"lease_acquired"/,
      ),
    );
    await store[0]?.started;
    const readerIds = Array.from({ length: SESSIONS }, (_, i) => `live-${partitions}-${i}`);
    client = await FleetClient.connect({ natsUrl: nats.url, partitions, auth: {} });
    const received = new Array<number>(WATCHERS).fill(0);
    const stopWatching = new AbortController();
    setMaxListeners(0, stopWatching.signal);
    const watching = readerIds.slice(0, WATCHERS).map(async (sid, i) => {
      for await (const _ of (client as FleetClient).events(sid, { from: "new", signal: stopWatching.signal })) {
        received[i] = (received[i] ?? 0) + 1;
      }
    });
    // The store's consumers exist before anything is appended; watchers need none since the live
    // path (changes 58, 67): each reads the subject's end when it starts, so a few seconds settle them.
    await until(
      async () => (await topology.jsm.streams.info(STREAMS.events.name)).state.consumer_count >= 1,
      900_000,
      "the store's consumers created",
    );
    const consumersWhileReading = (await topology.jsm.streams.info(STREAMS.events.name)).state.consumer_count;
    await new Promise((r) => setTimeout(r, 3_000));
    const readersIdle = await idleCpuRate(nats.pid, 2_000);
    let cpu = cpuSecondsOf(nats.pid);
    let inMsgs = await inMsgsOf(nats.monitorUrl);
    t = performance.now();
    const last = await append(publisher, roundRobin(readerIds, PER_SESSION, 20), partitions, 512);
    const partitionLast = new Map<number, number>();
    for (const [sid, seq] of last) {
      const p = partitionOf(sid, partitions);
      partitionLast.set(p, Math.max(partitionLast.get(p) ?? 0, seq));
    }
    await until(
      async () => {
        const active = await redis.hget(controlKey(PREFIX), "ns");
        const applied = active ? await redis.hgetall(appliedKey(PREFIX, active)) : {};
        return (
          received.every((n) => n >= PER_SESSION) &&
          [...partitionLast].every(([p, seq]) => Number(applied[String(p)] ?? 0) >= seq)
        );
      },
      600_000,
      "store and watchers read every event",
    );
    out(`  P=${partitions}: consumers on the event stream while the readers read: ${consumersWhileReading}`);
    const readers: PhaseResult = {
      events: SESSIONS * PER_SESSION,
      natsCpuSeconds: cpuSecondsOf(nats.pid) - cpu,
      inMsgs: (await inMsgsOf(nats.monitorUrl)) - inMsgs,
      ms: performance.now() - t,
      idle: readersIdle,
    };
    stopWatching.abort();
    await Promise.allSettled(watching);
    await client.close();
    client = undefined;
    await Promise.all(store.splice(0).map((s) => s.stop()));
    await new Promise((r) => setTimeout(r, 2_000));

    // 3. Baseline: one unfiltered reader while as many new sessions append as many events.
    const js = jetstream(nc);
    const reader = await js.consumers.get(STREAMS.events.name, { deliver_policy: DeliverPolicy.New });
    const messages = await reader.consume({ max_messages: 1_000 });
    let read = 0;
    const reading = (async () => {
      for await (const _ of messages) read++;
    })();
    const baselineIds = Array.from({ length: SESSIONS }, (_, i) => `base-${partitions}-${i}`);
    const baselineIdle = await idleCpuRate(nats.pid, 2_000);
    cpu = cpuSecondsOf(nats.pid);
    inMsgs = await inMsgsOf(nats.monitorUrl);
    t = performance.now();
    await append(publisher, roundRobin(baselineIds, PER_SESSION, 20), partitions, 512);
    await until(() => read >= SESSIONS * PER_SESSION, 600_000, "the one reader read every event");
    const baseline: PhaseResult = {
      events: SESSIONS * PER_SESSION,
      natsCpuSeconds: cpuSecondsOf(nats.pid) - cpu,
      inMsgs: (await inMsgsOf(nats.monitorUrl)) - inMsgs,
      ms: performance.now() - t,
      idle: baselineIdle,
    };
    await messages.close();
    await reading;
    publisher.close();
    return { readers, baseline };
  } finally {
    await client?.close().catch(() => undefined);
    await Promise.all(store.map((s) => s.stop()));
    await nc.close().catch(() => undefined);
    redis.disconnect();
    await redisServer.stop();
    await nats.stop();
  }
}

async function main() {
  out(
    `scale bench: ${FILL} stored events, ${WATCHERS} watchers, ${SESSIONS} sessions × ${PER_SESSION} events measured per phase, P = ${PARTITION_COUNTS.join(", ")}, ${REPUBLISH ? "the stream republishes stored events (change 67)" : "a stream without republish (the doorbell path)"}`,
  );
  const results = new Map<number, { readers: PhaseResult; baseline: PhaseResult }>();
  for (const p of PARTITION_COUNTS) {
    const r = await measureP(p);
    results.set(p, r);
    out(
      `  P=${p}: store + ${WATCHERS} watchers ${describe(r.readers)}; one unfiltered reader ${describe(r.baseline)}; ${(usPerEvent(r.readers) / usPerEvent(r.baseline)).toFixed(2)}x`,
    );
  }
  const largest = Math.max(...PARTITION_COUNTS);
  const r = results.get(largest);
  if (r) {
    out(
      `server cpu per event at P=${largest} with ${WATCHERS} watchers vs one reader: ${(usPerEvent(r.readers) / usPerEvent(r.baseline)).toFixed(2)}x (target <= 1.5x)`,
    );
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`bench:scale failed: ${(err as Error).stack ?? err}\n`);
    process.exit(1);
  },
);
