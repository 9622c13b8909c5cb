// `npm run bench:tools`: tool-runner throughput and dispatch→result latency, against raw JetStream
// round trips on the same fresh nats-server (started here through @fleet/testkit).
//
// Measured (runners and the raw echo worker are separate processes, like in production):
// - raw hop: js.publish to a stream subject → core subscriber receives it;
// - raw echo: js.publish request → pull-consumer worker → js.publish reply → core subscriber;
// - tool call: js.publish `fleet.tool.call.noop` (msgID) → runner → `result` record → core subscriber;
// - throughput of trivial calls with 1 and 2 runners (a window of calls in flight).
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { decodeToolResultRecord, encodeToolCallRequest, subjects, toolCallMsgId } from "@fleet/protocol";
import { applyTopology } from "@fleet/runtime";
import { startNats } from "@fleet/testkit";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const LATENCY_CALLS = Number(process.env.BENCH_LATENCY_CALLS ?? 2_000);
const THROUGHPUT_CALLS = Number(process.env.BENCH_THROUGHPUT_CALLS ?? 10_000);
const WINDOW = Number(process.env.BENCH_WINDOW ?? 256);
const WARMUP = 200;
const TARGET_OVERHEAD_MS = 2;

interface Waiter {
  resolve: () => void;
}

/** Routes received messages to the call waiting for that subject. */
function createReceiver(nc: NatsConnection, wildcard: string, accept: (data: Uint8Array) => boolean) {
  const waiters = new Map<string, Waiter>();
  nc.subscribe(wildcard, {
    callback: (_err, msg) => {
      const w = waiters.get(msg.subject);
      if (w && accept(msg.data)) {
        waiters.delete(msg.subject);
        w.resolve();
      }
    },
  });
  return (subject: string) =>
    new Promise<void>((resolve) => {
      waiters.set(subject, { resolve });
    });
}

const isFinal = (data: Uint8Array) => {
  const rec = decodeToolResultRecord(data);
  return rec.ok && rec.value.kind === "result";
};

async function latencies(n: number, one: (i: number) => Promise<void>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n + WARMUP; i++) {
    const t0 = performance.now();
    await one(i);
    if (i >= WARMUP) out.push(performance.now() - t0);
  }
  return out.sort((a, b) => a - b);
}

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

async function throughput(n: number, one: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(WINDOW, n) }, async () => {
      while (next < n) await one(next++);
    }),
  );
  return n / ((performance.now() - t0) / 1000);
}

function spawnProcess(script: string, env: Record<string, string>, readyText: string): Promise<ChildProcess> {
  // BENCH_CPU_PROF_DIR=<dir> writes a CPU profile of every spawned process (runners, echo worker).
  const prof = process.env.BENCH_CPU_PROF_DIR ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF_DIR}`] : [];
  const proc = spawn(process.execPath, [...prof, "--import", "tsx", "--conditions=@fleet/source", join(REPO, script)], {
    cwd: REPO,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  return new Promise((resolvePromise, reject) => {
    const onData = (d: Buffer) => {
      out += d;
      if (out.includes(readyText)) resolvePromise(proc);
    };
    proc.stdout?.on("data", onData);
    proc.stderr?.on("data", onData);
    proc.once("exit", (code) => reject(new Error(`${script} exited ${code}:\n${out}`)));
  });
}

async function stopProcess(proc: ChildProcess) {
  const exited = new Promise((r) => proc.once("exit", r));
  proc.kill("SIGTERM");
  await exited;
}

const fmt = (ms: number) => ms.toFixed(3);

async function main() {
  const nats = await startNats();
  const workspace = await mkdtemp(join(tmpdir(), "fleet-bench-ws-"));
  const nc = await connect({ servers: nats.url });
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  await applyTopology(nc);
  const children: ChildProcess[] = [];
  try {
    // Raw baselines.
    await jsm.streams.add({ name: "BENCH_HOP", subjects: ["bench.hop.>"], storage: "file" });
    await jsm.streams.add({ name: "BENCH_REQ", subjects: ["bench.req.>"], retention: "workqueue", storage: "file" });
    await jsm.streams.add({ name: "BENCH_RES", subjects: ["bench.res.>"], storage: "file" });
    const hopReceive = createReceiver(nc, "bench.hop.>", () => true);
    const echoReceive = createReceiver(nc, "bench.res.>", () => true);
    await nc.flush();
    const payload = new TextEncoder().encode(JSON.stringify({ sessionId: "bench", toolCallId: "x", args: { i: 1 } }));
    const rawHop = await latencies(LATENCY_CALLS, async (i) => {
      const got = hopReceive(`bench.hop.${i}`);
      await js.publish(`bench.hop.${i}`, payload);
      await got;
    });

    const worker = await spawnProcess("services/tools/bench/raw-echo-worker.ts", { NATS_URL: nats.url }, "ready");
    children.push(worker);
    const rawEcho = await latencies(LATENCY_CALLS, async (i) => {
      const got = echoReceive(`bench.res.l${i}`);
      await js.publish(`bench.req.l${i}`, payload);
      await got;
    });
    const rawEchoTput = await throughput(THROUGHPUT_CALLS, async (i) => {
      const got = echoReceive(`bench.res.t${i}`);
      await js.publish(`bench.req.t${i}`, payload);
      await got;
    });
    await stopProcess(worker);
    children.pop();

    // Tool runners.
    const resultReceive = createReceiver(nc, "fleet.tool.result.>", isFinal);
    await nc.flush();
    let seq = 0;
    const callOnce = async () => {
      const sessionId = "bench";
      const toolCallId = `c${seq++}`;
      const encoded = encodeToolCallRequest({
        sessionId,
        runId: "bench-run",
        toolCallId,
        toolName: "noop",
        args: { i: 1 },
        deadline: Date.now() + 60_000,
      });
      if (!encoded.ok) throw new Error(encoded.error);
      const got = resultReceive(subjects.toolResult(sessionId, toolCallId));
      await js.publish(subjects.toolCall("noop"), encoded.bytes, { msgID: toolCallMsgId(sessionId, toolCallId) });
      await got;
    };
    const runnerEnv = (id: string) => ({
      NATS_URL: nats.url,
      FLEET_WORKSPACE: workspace,
      FLEET_RUNNER_ID: id,
      FLEET_TOOL_CONCURRENCY: process.env.BENCH_RUNNER_CONCURRENCY ?? "64",
      LOG_LEVEL: "warn",
    });
    children.push(
      await spawnProcess(
        "services/tools/bench/bench-runner.ts",
        { ...runnerEnv("bench-1"), LOG_LEVEL: "info" },
        '"evt":"ops_listening"',
      ),
    );
    const toolLatency = await latencies(LATENCY_CALLS, callOnce);
    const tput1 = await throughput(THROUGHPUT_CALLS, callOnce);
    children.push(
      await spawnProcess(
        "services/tools/bench/bench-runner.ts",
        { ...runnerEnv("bench-2"), LOG_LEVEL: "info" },
        '"evt":"ops_listening"',
      ),
    );
    const tput2 = await throughput(THROUGHPUT_CALLS, callOnce);

    const rows = [
      ["raw hop (js.publish → core subscriber)", rawHop],
      ["raw echo round trip (publish → pull worker → publish → subscriber)", rawEcho],
      ["tool call dispatch → result (1 runner)", toolLatency],
    ] as const;
    console.log(
      `\nnats-server ${nc.info?.version} · Node ${process.version} · ${LATENCY_CALLS} sequential calls after ${WARMUP} warm-up\n`,
    );
    console.log("latency                                                              p50 ms    p99 ms");
    for (const [name, values] of rows) {
      console.log(`${name.padEnd(68)} ${fmt(pct(values, 50)).padStart(7)}  ${fmt(pct(values, 99)).padStart(8)}`);
    }
    const overEcho = pct(toolLatency, 50) - pct(rawEcho, 50);
    const overHop = pct(toolLatency, 50) - pct(rawHop, 50);
    console.log(
      `\np50 overhead of a tool call: ${fmt(overEcho)} ms over the raw echo round trip, ${fmt(overHop)} ms over the raw hop`,
    );
    console.log(`\nthroughput (${THROUGHPUT_CALLS} calls, ${WINDOW} in flight)`);
    console.log(`  raw echo, 1 worker     ${rawEchoTput.toFixed(0).padStart(7)} calls/s`);
    console.log(`  tool calls, 1 runner   ${tput1.toFixed(0).padStart(7)} calls/s`);
    console.log(`  tool calls, 2 runners  ${tput2.toFixed(0).padStart(7)} calls/s`);
    const pass = overEcho <= TARGET_OVERHEAD_MS;
    console.log(
      `\ntarget: p50 overhead ≤ ${TARGET_OVERHEAD_MS} ms over the raw round trip → ${pass ? "met" : "NOT met"}`,
    );
    console.log(
      JSON.stringify({
        rawHopP50: pct(rawHop, 50),
        rawHopP99: pct(rawHop, 99),
        rawEchoP50: pct(rawEcho, 50),
        rawEchoP99: pct(rawEcho, 99),
        toolP50: pct(toolLatency, 50),
        toolP99: pct(toolLatency, 99),
        overheadP50VsEcho: overEcho,
        overheadP50VsHop: overHop,
        rawEchoCallsPerSec: rawEchoTput,
        callsPerSec1Runner: tput1,
        callsPerSec2Runners: tput2,
      }),
    );
  } finally {
    for (const c of children) await stopProcess(c).catch(() => undefined);
    await nc.close();
    await nats.stop();
    await rm(workspace, { recursive: true, force: true });
  }
}

await main();
