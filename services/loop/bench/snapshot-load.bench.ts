// `npm run bench:snapshot-load`: the load of one long session (PROTOCOL change 42), on a fresh
// nats-server. Forges a 50,000-event session shaped like bench:loop's (each prompt 2 LLM turns × 64
// text deltas, coalesced, and one tool call), recorded by the engine and appended to FLEET_EVENTS
// as the loop appends; the loop's snapshot writer stores the fold at event 50,000 − TAIL (TAIL =
// half of FLEET_SNAPSHOT_EVERY's default: on average a load finds that many events after the last
// snapshot); then times the loop's session load, with snapshots and without (the whole log), the
// median of RUNS_WITH (21) and RUNS (7) loads: a load with snapshots takes tens of ms, and on a
// shared machine one of them can wait hundreds for the CPU. Prints `load 50000 events: <a> ms with
// snapshots, <b> ms without`; the target is a ≤ 100 ms load with snapshots.
import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import {
  contextAtLeaf,
  copySessionState,
  decodeEvent,
  encodeEvent,
  type FleetEvent,
  KV_BUCKETS,
  parsedEntryCount,
  partitionOf,
  STREAMS,
  subjects,
} from "@fleet/protocol";
import { applyTopology, connectNats, createLogger, createStreamPublisher, readSubject } from "@fleet/runtime";
import { startNats } from "@fleet/testkit";
import { jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { Registry } from "prom-client";
import { loadSession, type SnapshotSettings } from "../src/snapshots/session-load.js";
import { createSnapshotMetrics } from "../src/snapshots/snapshot-metrics.js";
import { createSnapshotStore } from "../src/snapshots/snapshot-store.js";
import { createSnapshotWriter, DEFAULT_SNAPSHOT_EVERY } from "../src/snapshots/snapshot-writer.js";
import { record } from "./record-session.js";
import { LOOP_CHUNK_CHARS, loopTurn } from "./workloads.js";

const EVENTS = Number(process.env.BENCH_EVENTS ?? 50_000);
const EVERY = DEFAULT_SNAPSHOT_EVERY;
const TAIL = Number(process.env.BENCH_TAIL ?? EVERY / 2);
const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const RUNS_WITH = Number(process.env.BENCH_RUNS_WITH ?? 3 * RUNS);
const PARTITIONS = 16;
const SESSION = "bench-long-session";
/** Appends in flight at once while forging (the loop appends one session's events one by one). */
const WINDOW = 256;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
const ms = (value: number) => value.toFixed(1);

const logger = createLogger("bench-snapshot-load", { level: "warn" });
const server = await startNats();
try {
  const nc = await connectNats({ url: server.url, name: "bench-snapshot-load" });
  const topology = await applyTopology(nc, { partitions: PARTITIONS });
  const js = jetstream(nc);
  const jsm = topology.jsm;
  const publisher = createStreamPublisher(nc);
  const partition = partitionOf(SESSION, topology.partitions);
  const subject = subjects.event(partition, SESSION);
  const snapshots: SnapshotSettings = {
    store: createSnapshotStore(await new Kvm(nc).open(KV_BUCKETS.snapshots.name), jsm),
    every: EVERY,
    metrics: createSnapshotMetrics(new Registry()),
  };

  let started = performance.now();
  const recorded = await record(
    Math.ceil(EVENTS / 10),
    (p) => [loopTurn(2 * p), loopTurn(2 * p + 1)],
    LOOP_CHUNK_CHARS,
    { sessionId: SESSION, until: (events) => events.length >= EVENTS },
  );
  const events = recorded.slice(0, EVENTS);
  const forged = performance.now() - started;

  /** Appends `batch` in order, WINDOW at a time, each with its id as `Nats-Msg-Id`. */
  const append = async (batch: readonly FleetEvent[]) => {
    for (let i = 0; i < batch.length; i += WINDOW) {
      const acks = await Promise.all(
        batch.slice(i, i + WINDOW).map((event) => {
          const encoded = encodeEvent(event);
          if (!encoded.ok) throw new Error(`event ${event.meta.id}: ${encoded.error}`);
          return publisher.publish(subject, encoded.bytes, { msgID: event.meta.id, timeoutMs: 30_000 });
        }),
      );
      const failed = acks.find((a) => !a.ok);
      if (failed && !failed.ok) throw new Error(`append failed: ${failed.error}`);
    }
  };
  started = performance.now();
  const cut = EVENTS - TAIL;
  await append(events.slice(0, cut));
  const appended = performance.now() - started;

  // The snapshot, as the session's writer makes it on its owner: the fold of the log through `cut`.
  const atCut = await loadSession({ js, jsm, sessionId: SESSION, partition, logger });
  const writer = createSnapshotWriter({ sessionId: SESSION, settings: snapshots, snapshotEvents: 0, logger });
  started = performance.now();
  writer.folded(atCut.state, atCut.marks, atCut.lastSeq, atCut.lastMsgId);
  await writer.idle();
  const written = performance.now() - started;
  const stored = await snapshots.store.read(SESSION);
  if (stored.kind !== "found") throw new Error(`no snapshot stored: ${JSON.stringify(stored)}`);
  await append(events.slice(cut));

  const load = (withSnapshots: boolean) =>
    loadSession({ js, jsm, sessionId: SESSION, partition, snapshots: withSnapshots ? snapshots : undefined, logger });
  /** Wall ms of each load, and this process's CPU ms (user + system) per load, the median. */
  const cpu: Record<string, number> = {};
  const time = async (withSnapshots: boolean) => {
    const runs: number[] = [];
    const cpus: number[] = [];
    for (let i = 0; i < (withSnapshots ? RUNS_WITH : RUNS); i++) {
      const t = performance.now();
      const c = process.cpuUsage();
      const loaded = await load(withSnapshots);
      runs.push(performance.now() - t);
      const used = process.cpuUsage(c);
      cpus.push((used.user + used.system) / 1000);
      if (loaded.state.events !== EVENTS) throw new Error(`loaded ${loaded.state.events} events, not ${EVENTS}`);
      if (loaded.from !== (withSnapshots ? "snapshot" : "log")) throw new Error(`loaded from ${loaded.from}`);
    }
    cpu[withSnapshots ? "with" : "without"] = median(cpus);
    return runs;
  };
  await load(true); // warm-up of both paths (code, connections)
  await load(false);
  const without = await time(false);
  const withSnapshots = await time(true);

  // Where a load with snapshots spends its time: the snapshot alone, and the tail alone.
  const phase = async (run: () => Promise<unknown>) => {
    const runs: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const t = performance.now();
      await run();
      runs.push(performance.now() - t);
    }
    return median(runs);
  };
  const snapshotOnly = await phase(() => snapshots.store.read(SESSION));
  const tailOnly = await phase(async () => {
    for await (const rec of readSubject(js, jsm, STREAMS.events.name, subject, { fromSeq: stored.snapshot.seq + 1 })) {
      decodeEvent(rec.data);
    }
  });

  // What a load leaves for later (change 64): the entries it parsed, and the first context built
  // at the leaf (each entry on the branch parsed then; here the branch is the whole session).
  let parsedAtLoad = 0;
  const contexts: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const loaded = await load(true);
    parsedAtLoad = parsedEntryCount(loaded.state.tree.entries);
    const t = performance.now();
    contextAtLeaf(loaded.state.tree);
    contexts.push(performance.now() - t);
  }
  const firstContext = median(contexts);
  const parsedContexts: number[] = [];
  const fromLog = await load(false);
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    contextAtLeaf(copySessionState(fromLog.state).tree); // a new tree object: derived again
    parsedContexts.push(performance.now() - t);
  }

  // A session let go while idle is snapshotted at its last event first: its next load reads none.
  const atEnd = await load(false);
  const idleWriter = createSnapshotWriter({
    sessionId: SESSION,
    settings: snapshots,
    snapshotEvents: stored.snapshot.state.events,
    logger,
  });
  await idleWriter.flush(atEnd.state, atEnd.marks, atEnd.lastSeq, atEnd.lastMsgId);
  const afterIdle = await phase(async () => {
    const loaded = await load(true);
    if (loaded.read !== 0 || loaded.state.events !== EVENTS) throw new Error(`read ${loaded.read} events after idle`);
  });

  const kinds = new Map<string, number>();
  for (const e of events) kinds.set(e.type, (kinds.get(e.type) ?? 0) + 1);
  console.log(
    `forged ${EVENTS} events (${kinds.get("agent_start") ?? 0} runs, ${kinds.get("message_update") ?? 0} message_update) in ${ms(forged)} ms; appended in ${ms(appended)} ms`,
  );
  console.log(
    `snapshot at event ${cut} (seq ${stored.snapshot.seq}): ${(stored.bytes / 1e6).toFixed(2)} MB body, ${Math.ceil(stored.bytes / snapshots.store.partBytes)} part(s), written in ${ms(written)} ms; ${TAIL} events after it`,
  );
  console.log(
    `loads (ms): with snapshots (${RUNS_WITH}) ${withSnapshots.map(ms).join(" ")}; without (${RUNS}) ${without.map(ms).join(" ")}`,
  );
  console.log(
    `  CPU of this process per load (median): ${ms(cpu.with ?? 0)} ms with snapshots, ${ms(cpu.without ?? 0)} ms without (machine load average ${loadavg()[0]?.toFixed(1)})`,
  );
  console.log(
    `  of which (medians, alone): snapshot read and decoded ${ms(snapshotOnly)} ms; ${TAIL} events read and decoded ${ms(tailOnly)} ms`,
  );
  console.log(
    `  entries parsed by a load: ${parsedAtLoad}; the first context at the leaf after it: ${ms(firstContext)} ms (median of ${RUNS}; every entry of the branch parsed then), ${ms(median(parsedContexts))} ms on a fold of parsed entries`,
  );
  console.log(
    `  a session let go idle (snapshot at its last event, no event read): ${ms(afterIdle)} ms (median of ${RUNS})`,
  );
  const a = median(withSnapshots);
  console.log(`load ${EVENTS} events: ${Math.round(a)} ms with snapshots, ${Math.round(median(without))} ms without`);
  console.log(`target: load with snapshots <= 100 ms: ${a <= 100 ? "MET" : "NOT MET"}`);
  publisher.close();
  await nc.close();
} finally {
  await server.stop();
}
