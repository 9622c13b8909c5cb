import { KV_BUCKETS } from "@fleet/protocol";
import { type NatsServer, startNats } from "@fleet/testkit";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { readKvEntries } from "./kv-entries.js";
import { connectNats } from "./nats-connection.js";
import { createLeaseManager, type LeaseManager } from "./partition-leases.js";
import { applyTopology } from "./topology.js";

const TTL = 1_000;
let server: NatsServer;
const conns: NatsConnection[] = [];

beforeAll(async () => {
  server = await startNats();
});
afterAll(async () => {
  for (const nc of conns) await nc.close();
  await server?.stop();
});

interface WorkerOptions {
  now?: () => number;
  onLost?: (partition: number) => Promise<void>;
  /** Another leases bucket (its TTL `ttlMs`), opened on the worker's connection; default `fleet_leases`. */
  bucket?: string;
  ttlMs?: number;
}

async function worker(id: string, events: string[], opts: WorkerOptions = {}) {
  const nc = await connectNats({ url: server.url, name: id });
  conns.push(nc);
  const kv = opts.bucket
    ? await new Kvm(nc).open(opts.bucket)
    : (await applyTopology(nc, { leaseTtlMs: TTL })).kv.leases;
  const mgr = createLeaseManager({
    kv,
    role: "loop",
    partitions: 16,
    workerId: id,
    ttlMs: opts.ttlMs ?? TTL,
    onAcquire: (p, epoch) => void events.push(`${id}+${p}@${epoch}`),
    onRelease: async (p, reason) => {
      events.push(`${id}-${p}:${reason}`);
      if (reason === "lost") await opts.onLost?.(p);
    },
    ...(opts.now ? { now: opts.now } : {}),
  });
  return { nc, mgr };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const heldBy = (m: LeaseManager) => [...m.held().keys()].sort((a, b) => a - b);

describe("partition leases", () => {
  it("two workers split 16 partitions fairly and disjointly, and a crashed worker's share moves within TTL + 1 s", async () => {
    const events: string[] = [];
    const a = await worker("w-a", events);
    await a.mgr.start();
    expect(heldBy(a.mgr)).toHaveLength(16);

    const b = await worker("w-b", events);
    await b.mgr.start();
    // a sees b on its next pass and releases its surplus; b claims the freed partitions.
    for (let i = 0; i < 20 && heldBy(b.mgr).length < 8; i++) {
      await a.mgr.tick();
      await b.mgr.tick();
      await sleep(50);
    }
    const ha = heldBy(a.mgr);
    const hb = heldBy(b.mgr);
    expect(ha).toHaveLength(8);
    expect(hb).toHaveLength(8);
    expect([...ha, ...hb].sort((x, y) => x - y)).toEqual([...Array(16).keys()]);
    expect(events.filter((e) => e.endsWith(":rebalance"))).toHaveLength(8);

    // Crash b: it stops renewing without releasing anything.
    const crashedAt = Date.now();
    await b.nc.close();
    let movedAt = 0;
    while (Date.now() - crashedAt < TTL * 4) {
      await a.mgr.tick();
      if (heldBy(a.mgr).length === 16) {
        movedAt = Date.now();
        break;
      }
      await sleep(100);
    }
    expect(movedAt).toBeGreaterThan(0);
    expect(movedAt - crashedAt).toBeLessThanOrEqual(TTL + 1_000);
    await a.mgr.stop();
    expect(heldBy(a.mgr)).toEqual([]);
  });

  it("a dead worker whose presence outlives its leases: all its partitions are claimed in the first pass after they expire", async () => {
    // Its own bucket, with a TTL that leaves a loaded machine's round trips a second within each
    // window below (the file's 1 s TTL left them a few hundred ms, and the presence expired first).
    const ttlMs = 4_000;
    const probe = await worker("w-probe", []);
    const bucket = "test_leases_dead";
    const kv = await new Kvm(probe.nc).create(bucket, { history: KV_BUCKETS.leases.history, ttl: ttlMs });
    const events: string[] = [];
    const dead = await worker("w-dead", events, { bucket, ttlMs });
    await dead.mgr.start();
    expect(heldBy(dead.mgr)).toHaveLength(16);
    await dead.nc.close();
    await dead.mgr.stop();
    // It died; its last presence write landed a quarter TTL after its last renewal (as a pass's write
    // can). Its leases expire a TTL after that renewal: then the presence is older than half a TTL
    // (stale to a worker that writes its own) and still there for a quarter TTL.
    const leases = await readKvEntries(kv, "loop.p.*");
    expect(leases).toHaveLength(16);
    const renewedAt = Math.max(...leases.map((e) => e.created.getTime()));
    await sleep(renewedAt + ttlMs / 4 - Date.now());
    await kv.put("loop.w.w-dead", JSON.stringify({ workerId: "w-dead", ts: Date.now() }));
    const heir = await worker("w-heir", events, { bucket, ttlMs });
    for (const deadline = Date.now() + ttlMs * 2; (await readKvEntries(kv, "loop.p.*")).length > 0; ) {
      if (Date.now() > deadline) throw new Error("leases did not expire");
      await sleep(25);
    }
    await heir.mgr.start();
    expect(heldBy(heir.mgr)).toEqual([...Array(16).keys()]);
    // The first pass saw the dead worker's presence (it is still there after it) and found it stale.
    const presences = await readKvEntries(kv, "loop.w.*");
    expect(presences.map((e) => e.key)).toEqual(["loop.w.w-dead", "loop.w.w-heir"]);
    const [deadAt, heirAt] = presences.map((e) => e.created.getTime()) as [number, number];
    expect(heirAt - deadAt).toBeGreaterThan(ttlMs / 2);
    await heir.mgr.stop();
  });

  it("epochs grow with every claim of a partition", async () => {
    const events: string[] = [];
    const c = await worker("w-c", events);
    await c.mgr.start();
    const first = c.mgr.held().get(3)?.epoch ?? 0;
    await c.mgr.stop();
    await c.mgr.start();
    const second = c.mgr.held().get(3)?.epoch ?? 0;
    expect(first).toBeGreaterThan(0);
    expect(second).toBeGreaterThan(first);
    await c.mgr.stop();
  });

  it("a holder whose lease view is stale writes only after a renewal lands, and never once another holder claimed it", async () => {
    const events: string[] = [];
    let skew = 0;
    // Like a loop worker, releasing a lost partition waits for a write in hand, which asks the fence.
    const lostWrites: string[] = [];
    const a: { mgr: LeaseManager } = await worker("w-d", events, {
      now: () => Date.now() + skew,
      onLost: async (p) => {
        const claims = events.filter((e) => e.startsWith(`w-d+${p}@`));
        const epochOf = Number(claims.at(-1)?.split("@")[1]);
        lostWrites.push(`${p}:${await a.mgr.writable(p, epochOf)}`);
      },
    });
    await a.mgr.tick();
    const epoch = a.mgr.held().get(5)?.epoch ?? 0;
    expect(epoch).toBeGreaterThan(0);
    expect(a.mgr.writable(5, epoch)).toBe(true);
    expect(await a.mgr.writable(5, epoch + 1)).toBe(false);

    // Its clock jumped past the TTL (a pause), but the server still holds the lease: the write waits
    // for the renewal, which succeeds.
    skew = TTL;
    const revisionBefore = a.mgr.held().get(5)?.revision ?? 0;
    const gate = a.mgr.writable(5, epoch);
    expect(gate).toBeInstanceOf(Promise);
    expect(await gate).toBe(true);
    expect(a.mgr.held().get(5)?.revision ?? 0).toBeGreaterThan(revisionBefore);

    // Really paused past the TTL: the server expires the lease and another holder claims it.
    await sleep(TTL * 2.5);
    const b = await worker("w-e", events);
    await b.mgr.tick();
    expect(b.mgr.held().has(5)).toBe(true);
    expect(await a.mgr.writable(5, epoch)).toBe(false);
    expect(a.mgr.held().has(5)).toBe(false);
    expect(events).toContain("w-d-5:lost");
    const lost = events.filter((e) => e.startsWith("w-d-") && e.endsWith(":lost")).length;
    await vi.waitFor(() => expect(lostWrites).toHaveLength(lost));
    expect(lostWrites).toContain("5:false");
    expect(new Set(lostWrites.map((w) => w.split(":")[1]))).toEqual(new Set(["false"]));
    await b.mgr.stop();
    await a.mgr.stop();
  });
});
