// Shared fixtures of the session-store tests: real nats-server and redis-server (testkit), a publisher
// that appends events the way the loop does, the store in-process or as a child process, and queries.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import {
  type FleetEvent,
  foldSessionTreeEvents,
  partitionOf,
  type SessionTree,
  type StoreOp,
  subjects,
} from "@fleet/protocol";
import { applyTopology, createLogger } from "@fleet/runtime";
import { type StoreService, startStoreService } from "@fleet/session-store";
import {
  connectRedis,
  createNamespaceControl,
  createSessionRepo,
  newNamespaceId,
  sessionKeys,
} from "@fleet/session-store/testing";
import {
  type NatsServer,
  type RedisCluster,
  type RedisServer,
  startNats,
  startRedis,
  startRedisCluster,
} from "@fleet/testkit";
import { type JetStreamClient, type JetStreamManager, jetstream } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll } from "vitest";
import { nodeArgsFor } from "../support/node-entry.js";

export const ROOT = resolve(import.meta.dirname, "../..");
export const silent = createLogger("store-test", { level: "silent" });

export interface Fixture {
  nats: NatsServer;
  /** The Redis, or the cluster's first node. */
  redisServer: RedisServer;
  /** Set when the store runs against a Redis Cluster (`startFixture({ redisCluster: true })`). */
  redisCluster: RedisCluster | undefined;
  /** The store's `REDIS_URL`: the Redis's, or the cluster's `redis+cluster://` form. */
  redisUrl: string;
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  redis: ReturnType<typeof connectRedis>;
  partitions: number;
  /** K, the stream groups of the log. */
  groups: number;
  prefix: string;
  leaseTtlMs: number;
  stop(): Promise<void>;
}

export async function startFixture(
  opts: { partitions?: number; groups?: number; leaseTtlMs?: number; redisCluster?: boolean } = {},
): Promise<Fixture> {
  const nats = await startNats();
  const redisCluster = opts.redisCluster ? await startRedisCluster() : undefined;
  const redisServer = redisCluster ? (redisCluster.nodes[0] as RedisServer) : await startRedis();
  const redisUrl = redisCluster ? redisCluster.url : redisServer.url;
  const nc = await connect({ servers: nats.url });
  const leaseTtlMs = opts.leaseTtlMs ?? 1_500;
  const topology = await applyTopology(nc, { partitions: opts.partitions ?? 4, groups: opts.groups, leaseTtlMs });
  const redis = connectRedis(redisUrl);
  return {
    nats,
    redisServer,
    redisCluster,
    redisUrl,
    nc,
    js: jetstream(nc),
    jsm: topology.jsm,
    redis,
    partitions: topology.partitions,
    groups: topology.groups,
    prefix: "fleet:store",
    leaseTtlMs,
    async stop() {
      await nc.close().catch(() => undefined);
      redis.disconnect();
      await (redisCluster ?? redisServer).stop();
      await nats.stop();
    },
  };
}

/**
 * A fixture for the tests of one file: started before them, stopped after them with every store
 * process they registered in `procs` (killed first).
 */
export function useStoreFixture(opts: Parameters<typeof startFixture>[0] = {}): {
  readonly f: Fixture;
  readonly procs: StoreProcess[];
} {
  let fixture: Fixture | undefined;
  const procs: StoreProcess[] = [];
  beforeAll(async () => {
    fixture = await startFixture(opts);
  });
  afterAll(async () => {
    for (const p of procs) await p.kill();
    await fixture?.stop();
  });
  return {
    get f() {
      if (!fixture) throw new Error("the store fixture is not started (use it inside a test)");
      return fixture;
    },
    procs,
  };
}

/**
 * Makes a fresh namespace active from stream sequence 1, so the projectors deliver the whole stream
 * into it live (without it, a store on a non-empty stream first rebuilds by replay). Returns its id.
 */
export async function activateNamespaceFromStart(redis: Fixture["redis"], prefix: string): Promise<string> {
  const control = createNamespaceControl(redis, prefix);
  const ns = newNamespaceId();
  await control.markBorn(ns);
  await control.switchTo(ns, 1);
  return ns;
}

/** Appends events as the loop does: `msgID = meta.id`, `expect.lastSubjectSequence` per session. */
export class Publisher {
  readonly lastSeq = new Map<string, number>();
  readonly seqs = new Map<string, number[]>();
  private readonly js: JetStreamClient;
  private readonly partitions: number;
  constructor(js: JetStreamClient, partitions: number) {
    this.js = js;
    this.partitions = partitions;
  }

  async publish(event: FleetEvent, opts: { msgId?: string } = {}): Promise<number> {
    const sid = event.meta.sessionId;
    const ack = await this.js.publish(subjects.event(partitionOf(sid, this.partitions), sid), JSON.stringify(event), {
      msgID: opts.msgId ?? event.meta.id,
      expect: { lastSubjectSequence: this.lastSeq.get(sid) ?? 0 },
    });
    if (!ack.duplicate) {
      this.lastSeq.set(sid, ack.seq);
      this.seqs.set(sid, [...(this.seqs.get(sid) ?? []), ack.seq]);
    }
    return ack.seq;
  }

  /** Publishes sessions interleaved (one event of each in turn), sessions concurrently. */
  async publishInterleaved(sessions: readonly FleetEvent[][]): Promise<void> {
    const queues = sessions.map((s) => [...s]);
    while (queues.some((q) => q.length > 0)) {
      await Promise.all(
        queues.map(async (q) => {
          const e = q.shift();
          if (e) await this.publish(e);
        }),
      );
    }
  }
}

export const storeOptions = (f: Fixture, workerId: string) => ({
  natsUrl: f.nats.url,
  redisUrl: f.redisUrl,
  prefix: f.prefix,
  workerId,
  partitions: f.partitions,
  groups: f.groups,
  leaseTtlMs: f.leaseTtlMs,
  opsPort: 0,
  cacheEntries: 1_000_000,
  maxBatch: 500,
  logger: silent,
});

export const startStore = (f: Fixture, workerId = "store-a"): Promise<StoreService> =>
  startStoreService(storeOptions(f, workerId));

const decoder = new TextDecoder();
export async function query(nc: NatsConnection, op: StoreOp, payload: unknown, timeout = 10_000) {
  const body = typeof payload === "string" ? payload : JSON.stringify(payload);
  const reply = await nc.request(subjects.store(op), body, { timeout });
  return JSON.parse(decoder.decode(reply.data)) as Record<string, unknown> & { ok: boolean };
}

export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Waits until every session's projection reached the publisher's last sequence for it. */
export async function waitProjected(f: Fixture, publisher: Publisher, timeoutMs = 30_000): Promise<void> {
  await waitFor(
    "the projection to catch up",
    async () => {
      const ns = await f.redis.hget(`${f.prefix}:ctl`, "ns");
      if (!ns) return false;
      for (const [sid, seq] of publisher.lastSeq) {
        const stored = await f.redis.hget(sessionKeys(f.prefix, ns, sid).meta, "lastSeq");
        if (Number(stored ?? 0) < seq) return false;
      }
      return true;
    },
    timeoutMs,
  );
}

/** The tree the store holds for a session in the active namespace (read straight from Redis). */
export async function storedTree(f: Fixture, sid: string): Promise<{ tree: SessionTree; lastSeq: number } | null> {
  const ns = await f.redis.hget(`${f.prefix}:ctl`, "ns");
  if (!ns) return null;
  const loaded = await createSessionRepo(f.redis, f.prefix).load(ns, sid);
  if (loaded.kind !== "ok") return null;
  return { tree: loaded.session.tree, lastSeq: loaded.session.lastSeq };
}

/** `JSON` view of a tree with labels in a canonical key order. */
export function canonicalTree(tree: SessionTree) {
  const labels = Object.fromEntries(Object.entries(tree.labels).sort(([a], [b]) => (a < b ? -1 : 1)));
  return { ...tree, labels };
}

export const expectedTree = (events: readonly FleetEvent[]) => canonicalTree(foldSessionTreeEvents(events));

/** A store service run as its own process (`nodeArgsFor`), killable by PID. */
export interface StoreProcess {
  readonly pid: number;
  readonly child: ChildProcess;
  output(): string;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export async function spawnStore(
  f: Fixture,
  opts: { script?: "main" | "cli"; args?: string[]; env?: Record<string, string>; readyPattern?: RegExp | null } = {},
): Promise<StoreProcess> {
  const script = resolve(ROOT, `services/session-store/src/${opts.script ?? "main"}.ts`);
  const setpriv = "/usr/bin/setpriv";
  const nodeArgs = [...nodeArgsFor(script), ...(opts.args ?? [])];
  const [cmd, args] = existsSync(setpriv)
    ? [setpriv, ["--pdeathsig", "KILL", "--", process.execPath, ...nodeArgs]]
    : [process.execPath, nodeArgs];
  const child = spawn(cmd, args, {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      NATS_URL: f.nats.url,
      REDIS_URL: f.redisUrl,
      FLEET_STORE_PREFIX: f.prefix,
      FLEET_LEASE_TTL_MS: String(f.leaseTtlMs),
      FLEET_PARTITIONS: String(f.partitions),
      FLEET_STREAM_GROUPS: String(f.groups),
      FLEET_OPS_PORT: "0",
      LOG_LEVEL: "info",
      ...opts.env,
    },
  });
  let log = "";
  child.stdout?.on("data", (c: Buffer) => {
    log += c.toString();
  });
  child.stderr?.on("data", (c: Buffer) => {
    log += c.toString();
  });
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  const ready = opts.readyPattern === undefined ? /"evt":"store_started"/ : opts.readyPattern;
  if (ready) {
    await waitFor(
      "the store process to start",
      async () => {
        if (child.exitCode !== null) throw new Error(`store exited early:\n${log}`);
        return ready.test(log);
      },
      30_000,
    );
  }
  return {
    pid: child.pid as number,
    child,
    output: () => log,
    async kill(signal = "SIGKILL") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

/** Runs the CLI to completion; resolves with its exit code and output. */
export async function runCli(f: Fixture, args: string[]): Promise<{ code: number | null; output: string }> {
  const p = await spawnStore(f, { script: "cli", args, readyPattern: null, env: { LOG_LEVEL: "warn" } });
  const code = await new Promise<number | null>((r) => {
    if (p.child.exitCode !== null) r(p.child.exitCode);
    else p.child.once("exit", (c) => r(c));
  });
  return { code, output: p.output() };
}
