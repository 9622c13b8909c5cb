// `npm run bench:cluster`: appends/s into the event log on the testkit's 3-node nats-server cluster
// with R3 streams, with K = 1 and K = 3 stream groups (issue 24, item 6). For each K, on a fresh
// cluster: BENCH_SESSIONS sessions (default 600) append BENCH_PER_SESSION events each (default 50),
// pipelined (BENCH_WINDOW in flight, default 512) over one connection per node, each append with its
// session's expected last subject sequence as the loop does. Prints appends/s, the servers' CPU per
// append and where each group's leader is. All three servers share this machine's cores, so K = 3
// cannot show the gain of three leaders on three machines: the figures are printed without a
// target, and docs/performance.md gives the arithmetic for a real cluster.
import { eventStreamNames } from "@fleet/protocol";
import { applyTopology, createStreamPublisher } from "@fleet/runtime";
import { cpuSecondsOf, startNatsCluster } from "@fleet/testkit";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { append, roundRobin } from "./appends.js";

const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 600);
const PER_SESSION = Number(process.env.BENCH_PER_SESSION ?? 50);
const WINDOW = Number(process.env.BENCH_WINDOW ?? 512);
const PARTITIONS = Number(process.env.BENCH_CLUSTER_PARTITIONS ?? 12);
const GROUP_COUNTS = (process.env.BENCH_GROUPS ?? "1,3").split(",").map(Number);

const out = (line: string) => process.stdout.write(`${line}\n`);
const perAppend = (cpuSeconds: number, appends: number) => ((cpuSeconds * 1e6) / appends).toFixed(1);

interface Result {
  appends: number;
  seconds: number;
  cpuSeconds: number;
  /** Each node's CPU seconds over the run, by node name. */
  nodeCpuSeconds: Map<string, number>;
  leaders: string[];
}

async function measureK(groups: number): Promise<Result> {
  const cluster = await startNatsCluster(3);
  const connections: NatsConnection[] = [];
  try {
    for (const url of cluster.urls) connections.push(await connect({ servers: url, noAsyncTraces: true }));
    const [first] = connections;
    if (!first) throw new Error("the cluster has no node");
    await applyTopology(first, { partitions: PARTITIONS, groups, replicas: 3, leaseTtlMs: 5_000 });
    const jsm = await jetstreamManager(first);
    const leaders: string[] = [];
    for (const name of eventStreamNames(groups)) {
      leaders.push(`${name} on ${(await jsm.streams.info(name)).cluster?.leader ?? "?"}`);
    }
    const publishers = connections.map((nc) => createStreamPublisher(nc));
    // A warm-up round on every connection, so leaders and routes are settled before the clock starts.
    await Promise.all(
      publishers.map((publisher, c) => {
        const warm = Array.from({ length: 30 }, (_, i) => `warm-${groups}-${c}-${i}`);
        return append(publisher, roundRobin(warm, 2, 20), PARTITIONS, WINDOW);
      }),
    );
    const cpu0 = cluster.nodes.map((n) => cpuSecondsOf(n.pid));
    const t0 = performance.now();
    // Each connection appends the events of its share of the sessions.
    await Promise.all(
      publishers.map((publisher, c) => {
        const ids = Array.from({ length: SESSIONS }, (_, i) => i)
          .filter((i) => i % publishers.length === c)
          .map((i) => `cl-${groups}-${i}`);
        return append(publisher, roundRobin(ids, PER_SESSION, 20), PARTITIONS, Math.ceil(WINDOW / publishers.length));
      }),
    );
    const seconds = (performance.now() - t0) / 1000;
    const nodeCpuSeconds = new Map(cluster.nodes.map((n, i) => [n.name, cpuSecondsOf(n.pid) - (cpu0[i] ?? 0)]));
    const cpuSeconds = [...nodeCpuSeconds.values()].reduce((sum, c) => sum + c, 0);
    for (const p of publishers) p.close();
    return { appends: SESSIONS * PER_SESSION, seconds, cpuSeconds, nodeCpuSeconds, leaders };
  } finally {
    await Promise.all(connections.map((nc) => nc.close().catch(() => undefined)));
    await cluster.stop();
  }
}

async function main() {
  out(
    `cluster bench: 3 nats-server nodes on this machine, R3, P = ${PARTITIONS}, ${SESSIONS} sessions × ${PER_SESSION} events per K, ${WINDOW} appends in flight, K = ${GROUP_COUNTS.join(", ")}`,
  );
  const rates = new Map<number, number>();
  for (const k of GROUP_COUNTS) {
    const r = await measureK(k);
    const rate = r.appends / r.seconds;
    rates.set(k, rate);
    out(
      `  K=${k}: ${r.appends} appends in ${r.seconds.toFixed(1)} s = ${rate.toFixed(0)} appends/s; nats-servers' CPU ${perAppend(r.cpuSeconds, r.appends)} µs per append (${[...r.nodeCpuSeconds].map(([n, c]) => `${n} ${perAppend(c, r.appends)}`).join(", ")}; ${r.leaders.join(", ")})`,
    );
  }
  out(
    `appends/s on the testkit's 3-node cluster with R3: ${GROUP_COUNTS.map((k) => `K=${k} ${(rates.get(k) ?? 0).toFixed(0)}`).join(", ")} (no target: all nodes share this machine's cores)`,
  );
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`bench:cluster failed: ${(err as Error).stack ?? err}\n`);
    process.exit(1);
  },
);
