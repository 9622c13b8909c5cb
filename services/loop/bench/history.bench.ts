// npm run bench:history — what history costs (issue 23 item 7). For each H (BENCH_HISTORY, default
// "0,100000"), a stack of its own: a fresh nats-server and Redis, a loop worker, the session store
// and the gateway (processes of their own); H ended sessions forged onto the log in the shape real
// ones leave (created, one finished run, the day's spend record) beside BENCH_LIVE live sessions (8).
// The stacks stay up together and every measurement alternates between them, so that the machine's
// load, which moves during a run of several minutes, weighs on each H alike. Measured:
// - takeover (median of BENCH_ROUNDS, 5): SIGKILL the worker holding every partition, start another;
//   from the kill until a prompt sent then to each live session has completed (its agent_end);
// - first prompt (median of ROUNDS × BENCH_FIRSTS, 5 after each takeover): a new session's first
//   prompt, sent to the new holder, until its agent_end;
// - approvals: GET /v1/approvals; search: GET /v1/sessions?q=<a live session's id prefix> (median of
//   BENCH_REQUESTS, 41, after 5 untimed).
// Prints `history <H> vs 0: takeover <x>x, first prompt <y>x, approvals <z>x, search <w>x`, each H's
// figures with their quartiles, and for each takeover the heir's start steps in ms from the kill
// (BENCH_VERBOSE=1: as they happen).
// BENCH_SPEND=0 forges no per-session spend records (KV `fleet_spend`; a starting worker reads only the totals).
// `npm run bench:history` then runs bench:snapshot-load for the `load 50000 events` line.
// Measured on this machine (2 shared cores), 4 Dec 2026: with spend records, takeover 3.05x
// (the heir's budget view: 7.3 s of 7.9 s; its index scan: 2 ms); without, 0.90x.
// With the totals in fleet_spend_totals (change 60), two runs of the earlier form of this bench (one
// H after the other, 3 takeovers and 5 requests each; load average 3 to 28): takeover 0.66x and
// 1.67x, first prompt 0.21x and 0.96x, approvals 2.91x and 0.25x, search 2.33x and 0.67x, on
// figures of a few ms (first prompt 15 ms, approvals 6 ms, search 6 ms at H = 0). Takeovers of
// either H fell near 2 s or near 4 s, so one round moved the ratio by ~2x: a prompt sent at the
// kill could go to the dead worker's pull (10 s pulls; nats-server 2.9 delivers to it) and came back
// one TTL late. With pulls of half the TTL and this form of the bench (4 Dec 2026, load average 33
// to 62): history 100000 vs 0: takeover 1.00x, first prompt 1.01x, approvals 1.00x, search 0.67x;
// at H = 0 takeovers 2148-2792 ms, first prompt p50 10.5 ms, approvals 3.1 ms, search 4.3 ms.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import {
  decodeEvent,
  encodeCommand,
  encodeEvent,
  type FleetCommand,
  KV_BUCKETS,
  partitionOf,
  SPEND_KEYS,
  STREAMS,
  sessionConfigWith,
  storeGroupConsumer,
  subjects,
} from "@fleet/protocol";
import { endedSessionLog } from "@fleet/protocol/testing";
import { applyTopology, connectNats, newId, sleep } from "@fleet/runtime";
import { getFreePort, startNats, startRedis } from "@fleet/testkit";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { pino } from "pino";
import { Registry } from "prom-client";
import { createScriptedProvider, type LoopWorker, type StreamFn, startLoopWorker } from "../src/index.js";

const HISTORIES = (process.env.BENCH_HISTORY ?? "0,100000").split(",").map(Number);
const LIVE = Number(process.env.BENCH_LIVE ?? 8);
/** Takeovers per H (each kills the holder and starts a new one); the median counts. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
/** New sessions' first prompts after each takeover (the figure is the median of all rounds'). */
const FIRSTS = Number(process.env.BENCH_FIRSTS ?? 5);
/** Gateway requests per history and query (after WARMUP untimed ones): the figure is their median. */
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 41);
const WARMUP = 5;
/** `0`: forge no spend records (isolates the takeover from the tenant budget view's reading of them). */
const SPEND = process.env.BENCH_SPEND !== "0";
const PARTITIONS = 16;
const TTL_MS = 2_000;
const ROOT = join(import.meta.dirname, "..", "..", "..");
const encoder = new TextEncoder();

const children: ChildProcess[] = [];
process.on("exit", () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

/** A service process; `onLine` gets each line it logs (LOG_LEVEL info then, else warn). */
function service(entry: string, env: Record<string, string>, onLine?: (line: string) => void): ChildProcess {
  const child = spawn(process.execPath, ["--conditions=@fleet/source", "--import", "tsx", join(ROOT, entry)], {
    env: { ...process.env, LOG_LEVEL: onLine ? "info" : "warn", ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let partial = "";
  child.stdout?.on("data", (chunk) => {
    const all = (partial + chunk).split("\n");
    partial = all.pop() ?? "";
    if (onLine) for (const line of all) onLine(line);
  });
  children.push(child);
  return child;
}

/** What the new holder logged while it started and took over, in ms from the kill. */
function startSteps(from: number) {
  const steps: string[] = [];
  let scans = 0;
  let scanMs = 0;
  /** BENCH_VERBOSE: the session whose logged steps are printed, in ms from when its prompt was sent. */
  let traced: { sessionId: string; from: number } | undefined;
  return {
    trace(sessionId: string, sentAt: number) {
      traced = { sessionId, from: sentAt };
    },
    write(line: string) {
      const evt = /"evt":"([a-z_]+)"/.exec(line)?.[1];
      if (traced && line.includes(`"sessionId":"${traced.sessionId}"`)) {
        process.stdout.write(
          `    ${traced.sessionId} ${evt ?? /"msg":"([^"]*)"/.exec(line)?.[1]} +${Math.round(performance.now() - traced.from)}\n`,
        );
      }
      if (evt === "takeover_scanned") {
        scans++;
        scanMs = Math.max(scanMs, Number(/"ms":(\d+)/.exec(line)?.[1] ?? 0));
        if (scans === PARTITIONS)
          steps.push(`all scanned +${Math.round(performance.now() - from)} (slowest ${scanMs} ms)`);
      } else if (evt?.startsWith("loop_start") || evt === "loop_topology") {
        steps.push(`${evt} +${Math.round(performance.now() - from)}`);
        if (process.env.BENCH_VERBOSE) process.stdout.write(`    ${steps.at(-1)}\n`);
      }
    },
    toString: () => steps.join(", "),
  };
}

const scripted: StreamFn = (context, options, signal) =>
  createScriptedProvider({ steps: [{ text: "done" }], now: Date.now }).streamFn(context, options, signal);

/**
 * The replacement worker, in this process (its modules already loaded: a child's node and tsx start
 * takes 5 to 15 s on a busy machine and has nothing to do with history).
 */
async function replacement(url: string, workerId: string, steps: { write(line: string): void }): Promise<LoopWorker> {
  const nc = await connectNats({ url, name: workerId });
  return startLoopWorker({
    nc,
    workerId,
    partitions: PARTITIONS,
    leaseTtlMs: TTL_MS,
    shutdownGraceMs: 1_000,
    sessionIdleMs: 600_000,
    providers: { scripted },
    settings: {
      coalesceMs: 10,
      coalesceDeltas: 64,
      hookTimeoutMs: 1_000,
      toolTimeoutMs: 30_000,
      approvalTools: new Set(),
      defaults: sessionConfigWith({ model: { provider: "scripted", modelId: "scripted" } }),
    },
    logger: pino(
      { level: process.env.BENCH_VERBOSE ? "debug" : "info" },
      { write: (line: string) => steps.write(line) },
    ),
    registry: new Registry(),
    newId: () => newId(),
  });
}

async function waitUntil(what: string, check: () => boolean | Promise<boolean>, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (
    !(await Promise.resolve()
      .then(check)
      .catch(() => false))
  ) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

/** Sends `prompt` to `sessionId`; resolves with the ms until its run's agent_end (from `from`). */
async function prompt(nc: NatsConnection, sessionId: string, from: number): Promise<number> {
  const ended = new Promise<number>((resolve) => {
    const sub = nc.subscribe(`fleet.evt.*.${sessionId}`, {
      callback: (_err, msg) => {
        const event = decodeEvent(msg.data);
        if (event.ok && event.value.type === "agent_end") {
          sub.unsubscribe();
          resolve(performance.now() - from);
        }
      },
    });
  });
  await nc.flush();
  const cmd = { type: "prompt", text: "hello", id: newId(), sessionId } as FleetCommand;
  const encoded = encodeCommand(cmd);
  if (!encoded.ok) throw new Error(encoded.error);
  await jetstream(nc).publish(subjects.command(partitionOf(sessionId, PARTITIONS), sessionId), encoded.bytes, {
    msgID: cmd.id,
  });
  return ended;
}

/** `op`, tried again (up to 10 times, 1 s apart) when it fails: a loaded server times publishes out. */
async function retried<T>(op: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await op();
    } catch (err) {
      if (attempt >= 10) throw err;
      await sleep(1_000);
    }
  }
}

/**
 * Forges `count` ended sessions (events and each one's spend record), pipelined. Each event is
 * published with its id as msgID, so a publish tried again is stored once.
 */
async function forge(nc: NatsConnection, count: number) {
  const js = jetstream(nc);
  const spendKv = await new Kvm(nc).open(KV_BUCKETS.spend.name);
  const started = performance.now();
  const window: Promise<unknown>[] = [];
  for (let i = 0; i < count; i++) {
    const id = `hist-${i}`;
    const events = endedSessionLog(id, i);
    for (const event of events) {
      const encoded = encodeEvent(event);
      if (!encoded.ok) throw new Error(encoded.error);
      const subject = subjects.event(partitionOf(id, PARTITIONS), id);
      window.push(retried(() => js.publish(subject, encoded.bytes, { msgID: event.meta.id, timeout: 30_000 })));
    }
    const day = new Date(events[0]?.meta.ts ?? Date.now()).toISOString().slice(0, 10);
    const spend = {
      sessionId: id,
      day,
      events: events.length,
      inputTokens: 10,
      outputTokens: 5,
      totalTokens: 15,
      costUsd: 0.001,
    };
    if (SPEND)
      window.push(retried(() => spendKv.put(SPEND_KEYS.session(day, id), encoder.encode(JSON.stringify(spend)))));
    if (window.length >= 1_000) await Promise.all(window.splice(0));
    if (i > 0 && i % 20_000 === 0)
      process.stdout.write(`  forged ${i} sessions (${Math.round((performance.now() - started) / 1000)} s)\n`);
  }
  await Promise.all(window);
}

interface Figures {
  takeoverMs: number;
  firstPromptMs: number;
  approvalsMs: number;
  searchMs: number;
}

/** One history's stack: its own nats-server, Redis, holder, store and gateway, kept up until `close`. */
interface Stack {
  history: number;
  nc: NatsConnection;
  gateway: string;
  live: string[];
  loopEnv: Record<string, string>;
  url: string;
  heldBy(worker: string): Promise<number>;
  holder: ChildProcess;
  processes: ChildProcess[];
  close(): Promise<void>;
}

async function startStack(history: number): Promise<Stack> {
  process.stdout.write(`history ${history}: starting\n`);
  const nats = await startNats();
  const redis = await startRedis();
  const dir = mkdtempSync(join(tmpdir(), "fleet-bench-history-"));
  writeFileSync(join(dir, "script.json"), JSON.stringify({ turns: [{ text: "done" }] }));
  const nc = await connectNats({ url: nats.url, name: "bench-history" });
  const env = {
    NATS_URL: nats.url,
    FLEET_PARTITIONS: String(PARTITIONS),
    FLEET_LEASE_TTL_MS: String(TTL_MS),
    FLEET_OPS_PORT: "0",
  };
  const processes: ChildProcess[] = [];
  const close = async () => {
    for (const child of processes.splice(0))
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await nc.close().catch(() => undefined);
    await redis.stop();
    await nats.stop();
  };
  try {
    await applyTopology(nc, { partitions: PARTITIONS, leaseTtlMs: TTL_MS });
    const loopEnv = {
      ...env,
      FLEET_PROVIDER: "scripted",
      FLEET_SCRIPT: join(dir, "script.json"),
      FLEET_COALESCE_MS: "10",
    };
    const jsm = await jetstreamManager(nc);
    const kv = await new Kvm(nc).open(KV_BUCKETS.leases.name);
    const heldBy = async (worker: string) => {
      let n = 0;
      for (let p = 0; p < PARTITIONS; p++) if ((await kv.get(`loop.p.${p}`))?.string().includes(`"${worker}"`)) n++;
      return n;
    };
    const holderId = `hist-${history}-a`;
    const holder = service("services/loop/src/main.ts", { ...loopEnv, FLEET_WORKER_ID: holderId });
    processes.push(holder);
    await waitUntil("worker a to hold every partition", async () => (await heldBy(holderId)) === PARTITIONS, 60_000);
    processes.push(
      service("services/session-store/src/main.ts", { ...env, REDIS_URL: redis.url, FLEET_WORKER_ID: "store-a" }),
    );
    const port = await getFreePort();
    processes.push(service("services/gateway/src/main.ts", { ...env, FLEET_GATEWAY_PORT: String(port) }));
    const gateway = `http://127.0.0.1:${port}`;
    await waitUntil("the gateway", async () => (await fetch(`${gateway}/readyz`)).ok, 60_000);

    if (history > 0) {
      const t = performance.now();
      await forge(nc, history);
      process.stdout.write(`  forged ${history} sessions in ${Math.round((performance.now() - t) / 1000)} s\n`);
    }
    const live = Array.from({ length: LIVE }, (_, i) => `live-${i}`);
    await Promise.all(live.map((id) => prompt(nc, id, performance.now())));
    // The store has projected everything (approvals and search read it).
    const t = performance.now();
    await waitUntil(
      "the store to catch up",
      async () => {
        // One unfiltered consumer per stream group (K = 1 here: `store-g0` on FLEET_EVENTS).
        const info = await jsm.consumers.info(STREAMS.events.name, storeGroupConsumer(0).durable_name);
        return info.num_pending === 0 && info.num_ack_pending === 0;
      },
      1_800_000,
    );
    process.stdout.write(`  store caught up in ${Math.round((performance.now() - t) / 1000)} s\n`);
    return { history, nc, gateway, live, loopEnv, url: nats.url, heldBy, holder, processes, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/**
 * Takeover round `round`: (after the first) a fresh holder process with the live sessions loaded;
 * SIGKILL it, start another, a prompt to each live session at once. Then FIRSTS new sessions' first
 * prompts, one after another, on the new holder. Returns the takeover's ms and the first prompts' ms.
 */
async function takeoverRound(stack: Stack, round: number): Promise<{ takeover: number; firsts: number[] }> {
  const { nc, live } = stack;
  if (round > 1) {
    const id = `hist-${stack.history}-a${round}`;
    stack.holder = service("services/loop/src/main.ts", { ...stack.loopEnv, FLEET_WORKER_ID: id });
    stack.processes.push(stack.holder);
    await waitUntil("the next holder", async () => (await stack.heldBy(id)) === PARTITIONS, 120_000);
    await Promise.all(live.map((sid) => prompt(nc, sid, performance.now())));
  }
  const killedAt = performance.now();
  stack.holder.kill("SIGKILL");
  const steps = startSteps(killedAt);
  if (process.env.BENCH_VERBOSE) steps.trace(live[0] as string, killedAt);
  const heir = await replacement(stack.url, `hist-${stack.history}-heir${round}`, steps);
  const takeovers = await Promise.all(live.map((id) => prompt(nc, id, killedAt)));
  const takeover = Math.max(...takeovers);
  const firsts: number[] = [];
  for (let i = 0; i < FIRSTS; i++) {
    const first = `new-${newId().slice(-6)}`;
    const sentAt = performance.now();
    if (i === 0) steps.trace(first, sentAt);
    firsts.push(await prompt(nc, first, sentAt));
  }
  process.stdout.write(
    `  history ${stack.history} round ${round}: takeover ${Math.round(takeover)} ms, first prompts ${firsts.map((f) => Math.round(f)).join(" ")} ms; new holder: ${steps}\n`,
  );
  await heir.stop();
  return { takeover, firsts };
}

/** ms of one GET of `url` (the body read). */
async function timedGet(url: string): Promise<number> {
  const from = performance.now();
  const res = await fetch(url);
  await res.text();
  if (!res.ok) throw new Error(`${url}: ${res.status}`);
  return performance.now() - from;
}

const quantiles = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const at = (q: number) => (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number).toFixed(1);
  return `p25 ${at(0.25)} p50 ${at(0.5)} p75 ${at(0.75)} ms`;
};

/**
 * Both histories' stacks stay up and every measurement alternates between them (takeover rounds,
 * first prompts, gateway requests), so a change of the machine's load during the run weighs on both
 * alike; each figure is the median of its samples (ROUNDS takeovers, ROUNDS × FIRSTS first prompts,
 * REQUESTS requests after WARMUP).
 */
async function main() {
  const stacks: Stack[] = [];
  try {
    for (const h of HISTORIES) stacks.push(await startStack(h));
    const samples = new Map(stacks.map((s) => [s.history, { takeover: [] as number[], firsts: [] as number[] }]));
    for (let round = 1; round <= ROUNDS; round++) {
      // Alternate which history goes first.
      const order = round % 2 === 1 ? stacks : [...stacks].reverse();
      for (const stack of order) {
        const r = await takeoverRound(stack, round);
        samples.get(stack.history)?.takeover.push(r.takeover);
        samples.get(stack.history)?.firsts.push(...r.firsts);
      }
    }
    const gets = new Map(stacks.map((s) => [s.history, { approvals: [] as number[], search: [] as number[] }]));
    for (let i = 0; i < WARMUP + REQUESTS; i++) {
      for (const stack of i % 2 === 0 ? stacks : [...stacks].reverse()) {
        const approvals = await timedGet(`${stack.gateway}/v1/approvals`);
        const search = await timedGet(`${stack.gateway}/v1/sessions?q=live-3`);
        if (i < WARMUP) continue;
        gets.get(stack.history)?.approvals.push(approvals);
        gets.get(stack.history)?.search.push(search);
      }
    }
    const results = new Map<number, Figures>();
    for (const stack of stacks) {
      const s = samples.get(stack.history) as { takeover: number[]; firsts: number[] };
      const g = gets.get(stack.history) as { approvals: number[]; search: number[] };
      const figures = {
        takeoverMs: median(s.takeover),
        firstPromptMs: median(s.firsts),
        approvalsMs: median(g.approvals),
        searchMs: median(g.search),
      };
      results.set(stack.history, figures);
      process.stdout.write(
        `history ${stack.history}: takeover ${Math.round(figures.takeoverMs)} ms (${s.takeover.map(Math.round).join(" ")}), first prompt ${quantiles(s.firsts)}, approvals ${quantiles(g.approvals)}, search ${quantiles(g.search)}\n`,
      );
    }
    const base = results.get(HISTORIES[0] as number) as Figures;
    for (const h of HISTORIES.slice(1)) {
      const r = results.get(h) as Figures;
      const x = (k: keyof Figures) => (r[k] / base[k]).toFixed(2);
      process.stdout.write(
        `history ${h} vs ${HISTORIES[0]}: takeover ${x("takeoverMs")}x, first prompt ${x("firstPromptMs")}x, approvals ${x("approvalsMs")}x, search ${x("searchMs")}x (load average ${loadavg()[0]?.toFixed(1)})\n`,
      );
    }
  } finally {
    for (const stack of stacks) await stack.close();
  }
  process.exit(0);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
