// npm run bench:gateway — 1,000 concurrent SSE clients on one gateway process over 100 active
// sessions. A loop worker (in this process) streams 64 text deltas per turn at a steady rate through
// the real coalescer; every SSE client records when each delta arrived. Prints delta→SSE-client
// latency p50/p99 and the gateway's memory per client, next to a direct core-NATS subscriber
// (another process) measured in the same run on the same deltas, every process's CPU, how often the
// gateway was preempted, and how bursty the deltas are at the subscriber (the sessions start together,
// so their coalescing windows close in step and the gateway fans out a burst of events at once).
// Knobs: BENCH_CLIENTS, BENCH_SESSIONS, BENCH_PROMPTS, BENCH_COALESCE_MS, BENCH_TOKENS_PER_SECOND;
// BENCH_GATEWAY_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") is passed to the gateway's node;
// BENCH_REPUBLISH=0 makes FLEET_EVENTS as a log from before change 67 has it (no republish: the
// gateway's hubs then follow sessions by doorbells and direct gets).
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { FleetClient } from "@fleet/client";
import { createScriptedProvider, type StreamFn, startLoopWorker } from "@fleet/loop";
import { type AssistantStreamEvent, eventStreamSpec, type SessionConfig, sessionConfigWith } from "@fleet/protocol";
import { applyTopology, connectNats, createLogger, newId, sleep } from "@fleet/runtime";
import { cpuSecondsOf, getFreePort, startNats } from "@fleet/testkit";
import { jetstreamManager, type StreamConfig } from "@nats-io/jetstream";
import { Registry } from "prom-client";

const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 1_000);
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 100);
const PROMPTS = Number(process.env.BENCH_PROMPTS ?? 3);
const COALESCE_MS = Number(process.env.BENCH_COALESCE_MS ?? 25);
const TOKENS_PER_SECOND = Number(process.env.BENCH_TOKENS_PER_SECOND ?? 100);
const CLIENT_PROCESSES = 2;
const DELTAS = 64;
const TURNS = PROMPTS;
const ROOT = join(import.meta.dirname, "..", "..", "..");
const CONFIG: SessionConfig = sessionConfigWith({
  model: { provider: "scripted", modelId: "bench" },
  systemPrompt: "bench",
});
const TEXT = "abcd".repeat(DELTAS);

const pct = (xs: Float64Array | number[], p: number) => {
  if (xs.length === 0) return Number.NaN;
  const s = Float64Array.from(xs).sort();
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number;
};
const fmt = (n: number, d = 1) => n.toLocaleString("en-US", { maximumFractionDigits: d });
const rssOf = (pid: number) => {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").match(/VmRSS:\s+(\d+) kB/);
  return line ? Number(line[1]) * 1024 : Number.NaN;
};

/** Child processes; killed when this bench exits, also after a failure. */
const children: ChildProcess[] = [];
process.on("exit", () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

function node(script: string, args: string[], env: NodeJS.ProcessEnv = {}, nodeArgs: string[] = []): ChildProcess {
  const child = spawn(
    process.execPath,
    [...nodeArgs, "--conditions=@fleet/source", "--import", "tsx", script, ...args],
    {
      env: { ...process.env, ...env },
      stdio: ["pipe", "pipe", "inherit"],
    },
  );
  children.push(child);
  return child;
}

/** Lines of a child's stdout: `onLine` for each; resolves `waitFor(prefix)` on the first such line. */
function lines(child: ChildProcess, onLine: (line: string) => void) {
  let partial = "";
  child.stdout?.on("data", (chunk) => {
    const all = (partial + chunk).split("\n");
    partial = all.pop() ?? "";
    for (const line of all) onLine(line);
  });
}

async function waitUntil(what: string, check: () => boolean | Promise<boolean>, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

async function main() {
  const server = await startNats();
  const setup = await connectNats({ url: server.url, name: "bench-setup" });
  if (process.env.BENCH_REPUBLISH === "0") {
    const { republish: _, ...before67 } = eventStreamSpec(0, { partitions: 16, groups: 1 });
    await (await jetstreamManager(setup)).streams.add(before67 as unknown as StreamConfig);
  }
  await applyTopology(setup, { partitions: 16 });
  await setup.close();

  // The loop worker, with a scripted provider paced at TOKENS_PER_SECOND (one 4-character delta per
  // token) that records when each text delta left the "LLM", indexed by (session, turn, delta).
  const sentAt = new Float64Array(SESSIONS * TURNS * DELTAS).fill(Number.NaN);
  const scripted: StreamFn = (ctx, opts, signal) => {
    let k = 0;
    for (const m of ctx.messages) if (m.role === "assistant") k++;
    const session = Number((opts.sessionId ?? "").slice("bench-".length));
    const provider = createScriptedProvider({
      steps: [{ text: TEXT }],
      now: Date.now,
      sleep,
      chunkChars: 4,
      tokensPerSecond: TOKENS_PER_SECOND,
      recordRequests: false,
    });
    const stream = provider.streamFn(ctx, opts, signal);
    return {
      [Symbol.asyncIterator]() {
        const inner = stream[Symbol.asyncIterator]();
        let i = 0;
        const mark = (r: IteratorResult<AssistantStreamEvent>) => {
          if (!r.done && r.value.type === "text_delta" && k < TURNS && i < DELTAS) {
            sentAt[(session * TURNS + k) * DELTAS + i++] = performance.timeOrigin + performance.now();
          }
          return r;
        };
        return {
          next: () => inner.next().then(mark),
          return: (value?: unknown) => inner.return?.(value) ?? Promise.resolve({ done: true as const, value }),
        };
      },
    };
  };
  const workerNc = await connectNats({ url: server.url, name: "bench-loop" });
  const worker = await startLoopWorker({
    nc: workerNc,
    workerId: "bench-loop",
    partitions: 16,
    leaseTtlMs: 5_000,
    shutdownGraceMs: 1_000,
    sessionIdleMs: 600_000,
    providers: { scripted },
    settings: {
      coalesceMs: COALESCE_MS,
      coalesceDeltas: 64,
      hookTimeoutMs: 1_000,
      toolTimeoutMs: 30_000,
      approvalTools: new Set(),
      defaults: CONFIG,
    },
    logger: createLogger("bench-loop", { level: "warn" }),
    registry: new Registry(),
    newId: () => newId(),
  });
  const client = await FleetClient.connect({ natsUrl: server.url, name: "bench-driver" });
  await Promise.all(Array.from({ length: SESSIONS }, (_, s) => client.createSession({}, { sessionId: `bench-${s}` })));

  // The gateway, in its own process.
  const port = await getFreePort();
  const gateway = node(
    join(ROOT, "services/gateway/src/main.ts"),
    [],
    {
      NATS_URL: server.url,
      FLEET_GATEWAY_PORT: String(port),
      LOG_LEVEL: "warn",
    },
    process.env.BENCH_GATEWAY_NODE_ARGS?.split(" ").filter(Boolean),
  );
  const gatewayUrl = `http://127.0.0.1:${port}`;
  await waitUntil(
    "the gateway",
    async () => (await fetch(`${gatewayUrl}/readyz`).catch(() => undefined))?.ok === true,
    30_000,
  );
  await sleep(1_000);
  const rssIdle = rssOf(gateway.pid as number);

  // The baseline subscriber and the SSE clients, in processes of their own.
  const ended = new Map<number, () => void>();
  const dumps = new Map<ChildProcess, string>();
  const ready = new Set<ChildProcess>();
  const track = (child: ChildProcess) =>
    lines(child, (line) => {
      if (line === "ready") ready.add(child);
      else if (line.startsWith("end ")) ended.get(Number(line.slice(4)))?.();
      else if (line.startsWith("dump ")) dumps.set(child, line.slice(5));
    });
  const script = join(import.meta.dirname, "delta-clients.ts");
  const common = [String(SESSIONS), String(TURNS), String(DELTAS)];
  const baseline = node(script, ["nats", server.url, ...common]);
  track(baseline);
  const per = Math.ceil(CLIENTS / CLIENT_PROCESSES);
  const sseProcesses = Array.from({ length: CLIENT_PROCESSES }, (_, p) => {
    const child = node(script, [
      "sse",
      gatewayUrl,
      ...common,
      String(p * per),
      String(Math.min(per, CLIENTS - p * per)),
    ]);
    track(child);
    return child;
  });
  await waitUntil("the clients", () => ready.size === CLIENT_PROCESSES + 1, 120_000);
  await sleep(2_000);
  const rssClients = rssOf(gateway.pid as number);
  const metrics = await (await fetch(`${gatewayUrl}/metrics`)).text();
  const openStreams = Number(metrics.match(/^fleet_gateway_sse_clients (\d+)/m)?.[1] ?? Number.NaN);

  // The runs: every session, PROMPTS prompts one after another; a run ends at its agent_end.
  let peakRss = rssClients;
  const rssTimer = setInterval(() => (peakRss = Math.max(peakRss, rssOf(gateway.pid as number))), 100);
  const cpuOf = () => ({
    gateway: cpuSecondsOf(gateway.pid),
    "nats-server": cpuSecondsOf(server.pid),
    "loop+driver": cpuSecondsOf(process.pid),
    "SSE clients": sseProcesses.reduce((sum, c) => sum + cpuSecondsOf(c.pid), 0),
    "NATS subscriber": cpuSecondsOf(baseline.pid),
  });
  const switchesOf = (pid: number) => {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    return Number(status.match(/^nonvoluntary_ctxt_switches:\s+(\d+)/m)?.[1] ?? Number.NaN);
  };
  const switches0 = switchesOf(gateway.pid as number);
  const cpu0 = cpuOf();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: SESSIONS }, async (_, s) => {
      for (let r = 0; r < PROMPTS; r++) {
        const done = new Promise<void>((resolve) => ended.set(s, resolve));
        await client.prompt(`bench-${s}`, `prompt ${r}`);
        await done;
      }
    }),
  );
  const elapsed = (performance.now() - t0) / 1000;
  clearInterval(rssTimer);
  const cpu1 = cpuOf();
  const preempted = switchesOf(gateway.pid as number) - switches0;
  const cpuKeys = Object.keys(cpu0) as Array<keyof typeof cpu0>;
  const cpuTotal = cpuKeys.reduce((sum, k) => sum + cpu1[k] - cpu0[k], 0);
  // Late frames still count: wait until the gateway has been idle for a while before the dumps.
  await sleep(3_000);

  const after = await (await fetch(`${gatewayUrl}/metrics`)).text();
  const dropped = Number(after.match(/^fleet_gateway_sse_dropped_total (\d+)/m)?.[1] ?? Number.NaN);
  for (const child of [baseline, ...sseProcesses]) child.stdin?.write("dump\n");
  await waitUntil("the dumps", () => dumps.size === CLIENT_PROCESSES + 1, 60_000);
  const latencies = (child: ChildProcess, first: number, readersOf: (reader: number) => number) => {
    const dump = JSON.parse(dumps.get(child) as string) as { events: number; arrived: Array<number | null> };
    const out: number[] = [];
    const arrivals: number[] = [];
    dump.arrived.forEach((at, j) => {
      const reader = Math.floor(j / (TURNS * DELTAS));
      const rest = j % (TURNS * DELTAS);
      const sent = sentAt[readersOf(first + reader) * TURNS * DELTAS + rest];
      if (at !== null) arrivals.push(at);
      if (at !== null && sent !== undefined && !Number.isNaN(sent)) out.push(at - sent);
    });
    return { out, arrivals, events: dump.events };
  };
  /**
   * For each event (a distinct arrival time at the NATS subscriber), how many events arrived in its
   * burst: a run of arrivals each less than 1 ms after the one before.
   */
  const burstSizes = (arrivals: number[]) => {
    const times = [...new Set(arrivals)].sort((a, b) => a - b);
    const sizes: number[] = [];
    for (let start = 0, i = 1; i <= times.length; i++) {
      if (i < times.length && (times[i] as number) - (times[i - 1] as number) < 1) continue;
      for (let k = start; k < i; k++) sizes.push(i - start);
      start = i;
    }
    return sizes;
  };
  const base = latencies(baseline, 0, (s) => s);
  const sse = sseProcesses.map((child, p) => latencies(child, p * per, (c) => c % SESSIONS));
  const sseLatency = sse.flatMap((x) => x.out);
  const expectedSamples = CLIENTS * TURNS * DELTAS;

  console.log(
    `\nFleet gateway benchmark — nats-server ${client.nc.info?.version}, one gateway process, ${CLIENTS} SSE clients (${CLIENT_PROCESSES} client processes) over ${SESSIONS} active sessions,`,
  );
  console.log(
    `${PROMPTS} prompts per session, each one LLM turn of ${DELTAS} text deltas at ${TOKENS_PER_SECOND} tokens/s; coalescing ${COALESCE_MS} ms / 64 deltas\n`,
  );
  console.log(
    `  runs                        ${SESSIONS * PROMPTS} in ${fmt(elapsed, 2)} s; ${openStreams} SSE streams open, ${dropped} dropped as too slow (the bench's clients do not resume)`,
  );
  console.log(
    `  delta→SSE client            p50 ${fmt(pct(sseLatency, 50), 2)} ms   p99 ${fmt(pct(sseLatency, 99), 2)} ms  (${sseLatency.length} of ${expectedSamples} deltas × clients)`,
  );
  console.log(
    `  delta→NATS subscriber       p50 ${fmt(pct(base.out, 50), 2)} ms   p99 ${fmt(pct(base.out, 99), 2)} ms  (baseline, same run: ${base.out.length} deltas)`,
  );
  const bursts = burstSizes(base.arrivals);
  console.log(
    `  bursts at the subscriber    the median event with text deltas came in a burst of ${pct(bursts, 50)} such events less than 1 ms apart (p90 ${pct(bursts, 90)})`,
  );
  console.log(
    `  gateway's share             p50 +${fmt(pct(sseLatency, 50) - pct(base.out, 50), 2)} ms   p99 +${fmt(pct(sseLatency, 99) - pct(base.out, 99), 2)} ms`,
  );
  console.log(
    `  gateway memory              RSS ${fmt(rssIdle / 2 ** 20)} MiB with no client, ${fmt(rssClients / 2 ** 20)} MiB with ${CLIENTS} idle clients → ${fmt((rssClients - rssIdle) / CLIENTS / 1024, 1)} KiB per client; peak during the runs ${fmt(peakRss / 2 ** 20)} MiB`,
  );
  console.log(`  CPU during the runs         ${cpuKeys.map((k) => `${k} ${fmt(cpu1[k] - cpu0[k], 2)} s`).join(", ")}`);
  console.log(
    `                              total ${fmt(cpuTotal, 1)} s in ${fmt(elapsed, 1)} s wall = ${fmt(cpuTotal / elapsed, 2)} of this machine's ${availableParallelism()} cores`,
  );
  console.log(`  gateway preempted           ${preempted} times during the runs (involuntary context switches)`);
  const p50 = pct(sseLatency, 50);
  const share = p50 - pct(base.out, 50);
  console.log("\n  target");
  console.log(
    `  p50 ≤ window + 5 ms         ${fmt(p50, 2)} ms vs ${COALESCE_MS + 5} ms  ${p50 <= COALESCE_MS + 5 ? "MET" : "NOT MET"}`,
  );
  // Issue 24: the gateway's own share of a delta's latency, over the same run's NATS subscriber.
  console.log(`gateway share p50: ${share.toFixed(2)} ms (target <= 5 ms)`);

  gateway.kill("SIGTERM");
  await new Promise((r) => gateway.once("exit", r));
  await worker.stop();
  await workerNc.close();
  await client.close();
  await server.stop();
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
