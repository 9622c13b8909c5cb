// The I/O parts of bench:loop's CPU floor, measured on the bench's own nats-server in the same run.
// Each figure is CPU time (all processes involved, nats-server included) per unit of work:
// - a fenced append: JetStream publish with a msgID and an expected last subject sequence, 200
//   subjects written in turn, as the loop appends events;
// - a bare subscriber: a core subscription in its own process that only counts the same appends,
//   plus the extra nats-server CPU of delivering them to it;
// - a raw echo tool round trip: the call published to a work-queue stream, pulled by a bare consumer
//   that publishes its input back as the result to a results stream, the caller waiting for it on a
//   core subscription.
import { spawn } from "node:child_process";
import type { StreamPublisher } from "@fleet/runtime";
import { cpuSecondsOf } from "@fleet/testkit";
import { AckPolicy, type JetStreamManager, jetstream, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";

const SUBJECTS = 200;
const PER_SUBJECT = 150;
const TOOL_CALLS = 3_000;
const TOOL_CONCURRENCY = 200;

/** CPU µs of this process plus nats-server while `work` runs. */
async function cpuUs(serverPid: number | undefined, work: () => Promise<void>) {
  const server0 = cpuSecondsOf(serverPid);
  const self0 = process.cpuUsage();
  await work();
  const self = process.cpuUsage(self0);
  return { serverUs: (cpuSecondsOf(serverPid) - server0) * 1e6, selfUs: self.user + self.system };
}

async function fencedAppends(publisher: StreamPublisher, prefix: string, payload: Uint8Array) {
  await Promise.all(
    Array.from({ length: SUBJECTS }, async (_, s) => {
      let last = 0;
      for (let i = 0; i < PER_SUBJECT; i++) {
        const ack = await publisher.publish(`${prefix}.${s}`, payload, {
          msgID: `${prefix}-${s}-${i}`,
          expectLastSubjectSequence: last,
        });
        if (!ack.ok) throw new Error(ack.error);
        last = ack.seq;
      }
    }),
  );
}

/** A process that counts core messages on `subject` and prints `ready`, then its count on stdin EOF. */
function startCounter(url: string, subject: string) {
  const script = `
    import { connect } from "@nats-io/transport-node";
    const nc = await connect({ servers: ${JSON.stringify(url)}, noAsyncTraces: true });
    let n = 0;
    nc.subscribe(${JSON.stringify(subject)}, { callback: () => { n++; } });
    await nc.flush();
    process.stdout.write("ready\\n");
    process.stdin.on("end", async () => { await nc.flush(); await nc.close(); process.stdout.write(n + "\\n"); process.exit(0); });
    process.stdin.resume();`;
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
    cwd: import.meta.dirname,
    stdio: ["pipe", "pipe", "inherit"],
  });
  let out = "";
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (chunk) => {
      out += chunk;
      if (out.includes("ready\n")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`counter exited with ${code}`)));
  });
  const stop = async () => {
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.stdin.end();
    await exited;
    return Number(out.split("\n").filter(Boolean).at(-1));
  };
  return { pid: child.pid, ready, stop };
}

/**
 * bench:loop's floor at c63fc6e (main before issue 30), measured the same way on the 2-vCPU
 * development VM (Node 20, nats-server 2.9.10) on 2026-12-03: the median of 3 runs (engine alone
 * 0.50, 0.62 and 0.81 ms; floor 1.36, 1.60 and 1.81 ms per prompt). The ratio to the floor hides a
 * floor that got slower (the engine alone is part of it), so bench:loop prints the floor against
 * this one too.
 */
export const C63FC6E_FLOOR = { engineMs: 0.62, totalMs: 1.6 } as const;

export interface FloorParts {
  /** Fenced append: nats-server + client CPU µs per event. */
  appendUs: number;
  /** Bare subscriber: its own CPU + extra nats-server CPU µs per event received. */
  subscriberUs: number;
  /** Raw echo tool round trip: caller + echo + nats-server CPU µs per call. */
  toolRoundTripUs: number;
}

export async function measureFloorParts(opts: {
  nc: NatsConnection;
  jsm: JetStreamManager;
  publisher: StreamPublisher;
  url: string;
  serverPid: number | undefined;
  payload: Uint8Array;
}): Promise<FloorParts> {
  const { jsm, publisher, serverPid, payload } = opts;
  await jsm.streams.add({ name: "BENCH_FLOOR", subjects: ["floor.>"], storage: StorageType.File });
  const events = SUBJECTS * PER_SUBJECT;

  await fencedAppends(publisher, "floor.warm", payload);
  const alone = await cpuUs(serverPid, () => fencedAppends(publisher, "floor.alone", payload));

  const counter = startCounter(opts.url, "floor.watched.>");
  await counter.ready;
  const counterCpu0 = cpuSecondsOf(counter.pid);
  const watched = await cpuUs(serverPid, () => fencedAppends(publisher, "floor.watched", payload));
  const counterUs = (cpuSecondsOf(counter.pid) - counterCpu0) * 1e6;
  const received = await counter.stop();
  if (received !== events) throw new Error(`bare subscriber received ${received} of ${events} events`);

  await jsm.streams.add({
    name: "BENCH_CALLS",
    subjects: ["floorcall.>"],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
  });
  await jsm.streams.add({ name: "BENCH_RESULTS", subjects: ["floorresult.>"], storage: StorageType.File });
  await jsm.consumers.add("BENCH_CALLS", { durable_name: "echo", ack_policy: AckPolicy.Explicit });
  const consumer = await jetstream(opts.nc).consumers.get("BENCH_CALLS", "echo");
  const calls = await consumer.consume({ max_messages: TOOL_CONCURRENCY });
  const echo = (async () => {
    for await (const m of calls) {
      const id = m.subject.slice("floorcall.".length);
      await publisher.publish(`floorresult.${id}`, m.data, { msgID: `result-${id}` });
      m.ack();
    }
  })();
  const roundTrips = async (tag: string, n: number) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: TOOL_CONCURRENCY }, async () => {
        while (next < n) {
          const id = `${tag}-${next++}`;
          const sub = opts.nc.subscribe(`floorresult.${id}`, { max: 1 });
          const ack = await publisher.publish(`floorcall.${id}`, payload, { msgID: `call-${id}` });
          if (!ack.ok) throw new Error(ack.error);
          for await (const _ of sub) break;
        }
      }),
    );
  };
  await roundTrips("warm", TOOL_CONCURRENCY * 2);
  const tool = await cpuUs(serverPid, () => roundTrips("run", TOOL_CALLS));
  calls.stop();
  await echo;

  for (const name of ["BENCH_FLOOR", "BENCH_CALLS", "BENCH_RESULTS"]) await jsm.streams.delete(name);
  const per = (us: number, n: number) => us / n;
  return {
    appendUs: per(alone.serverUs + alone.selfUs, events),
    subscriberUs: per(counterUs + Math.max(0, watched.serverUs - alone.serverUs), events),
    toolRoundTripUs: per(tool.serverUs + tool.selfUs, TOOL_CALLS),
  };
}
