import { randomUUID } from "node:crypto";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { eventStreamName, storeGroupLeaseKey } from "@fleet/protocol";
import {
  applyTopology,
  checkServerAtStartup,
  connectFleet,
  createBlobAccess,
  createLeaseManager,
  type LeaseManager,
  type Logger,
  type NatsAuthSettings,
  type OpsServer,
  resolveBlobBlocks,
  startOpsServer,
} from "@fleet/runtime";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { createAppliedAnnouncer } from "./applied-notices.js";
import { type GroupWorker, startGroupWorker } from "./group-worker.js";
import { upgradeIndexes } from "./index-upgrade.js";
import { createStoreMetrics } from "./metrics.js";
import { createNamespaceControl } from "./namespace.js";
import { createProjector } from "./projector.js";
import { startQueryServer } from "./query-server.js";
import { connectRedis } from "./redis-client.js";
import { streamGapReader, streamLastSeq } from "./replay.js";
import { startSelfHealer } from "./self-heal.js";
import { createSessionCache } from "./session-cache.js";
import { createSessionRepo } from "./session-repo.js";
import { createSlots } from "./slots.js";

export interface StoreServiceOptions {
  natsUrl: string;
  /** NATS login (the tenant's `store` user); none = anonymous. */
  natsAuth?: NatsAuthSettings;
  /** Replicas of the streams and buckets this instance creates (default 1). */
  replicas?: number;
  /** Interface of the ops server (default 127.0.0.1). */
  opsHost?: string;
  redisUrl: string;
  prefix: string;
  workerId?: string;
  /** P and K to provision when the log has none yet (fixed once written; another value refuses to start). */
  partitions?: number | undefined;
  groups?: number | undefined;
  leaseTtlMs: number;
  opsPort: number;
  cacheEntries: number;
  /** How often the control record is read (default 1 s). */
  healCheckMs?: number;
  maxBatch: number;
  /** Batches applied at once across the held groups (default 2). */
  concurrentBatches?: number;
  logger: Logger;
}

export interface StoreService {
  readonly workerId: string;
  readonly ops: OpsServer;
  readonly leases: LeaseManager;
  /** Stream groups this instance projects now. */
  held(): number[];
  stop(): Promise<void>;
}

export { connectRedis };

/**
 * One store process: claims `store.g.<g>` leases, projects the held stream groups into Redis (one
 * unfiltered consumer per group, every partition of it), answers
 * `fleet.store.<op>` (any instance answers any session), and exports metrics on the ops port.
 */
export async function startStoreService(opts: StoreServiceOptions): Promise<StoreService> {
  const { logger } = opts;
  const workerId = opts.workerId || `store-${randomUUID().slice(0, 8)}`;
  const connect = async (name: string): Promise<NatsConnection> =>
    (
      await connectFleet({
        role: "store",
        url: opts.natsUrl,
        name,
        ...(opts.natsAuth ? { auth: opts.natsAuth } : {}),
        onPermissionError: (line, detail) => logger.error({ evt: "nats_permission_denied", ...detail }, line),
      })
    ).nc;
  const nc = await connect(`fleet-store-${workerId}`);
  const server = await checkServerAtStartup(nc, logger);
  if (!server.ok) {
    await nc.close();
    throw new Error(server.error);
  }
  const topology = await applyTopology(nc, {
    partitions: opts.partitions,
    groups: opts.groups,
    leaseTtlMs: opts.leaseTtlMs,
    ...(opts.replicas !== undefined ? { replicas: opts.replicas } : {}),
    logger,
  });
  // The event flood gets its own connection, so lease renewals and queries never queue behind it.
  const ncData = await connect(`fleet-store-${workerId}-data`);
  const js = jetstream(ncData);
  const jsm = topology.jsm;
  const redis = connectRedis(opts.redisUrl);
  const repo = createSessionRepo(redis, opts.prefix);
  const cache = createSessionCache(opts.cacheEntries);
  const namespaces = createNamespaceControl(redis, opts.prefix);
  const projector = createProjector({
    repo,
    cache,
    partitions: topology.partitions,
    readGap: streamGapReader(js, jsm, topology.groups),
    onInvalid: (record, error) =>
      logger.warn({ evt: "store_invalid_event", seq: record.seq, subject: record.subject, error }, "invalid event"),
  });

  const replayDeps = {
    js,
    jsm,
    redis,
    prefix: opts.prefix,
    partitions: topology.partitions,
    groups: topology.groups,
    logger,
    cacheEntries: opts.cacheEntries,
  };
  const healer = startSelfHealer({
    deps: replayDeps,
    namespaces,
    logger,
    ...(opts.healCheckMs !== undefined ? { intervalMs: opts.healCheckMs } : {}),
  });

  // A fresh store (or an empty stream) is ready in milliseconds; a long rebuild goes on after start-up.
  await Promise.race([healer.firstCheck, delay(5_000)]);
  // A namespace from before the session indexes is rebuilt with them while queries read it as it is
  // (in the background; a stop meanwhile leaves it to the rebuild lock's expiry and the next start).
  void healer.firstCheck.then(() => upgradeIndexes(replayDeps, namespaces, logger));

  const workers = new Map<number, GroupWorker>();
  const announce = createAppliedAnnouncer(nc, logger);
  const slots = createSlots(opts.concurrentBatches ?? 2);
  const ops = await startOpsServer({
    port: opts.opsPort,
    ...(opts.opsHost ? { host: opts.opsHost } : {}),
    ready: () => !nc.isClosed() && !ncData.isClosed() && redis.status === "ready",
  });
  const metrics = createStoreMetrics(ops.registry);

  const blobs = createBlobAccess(nc);
  const queries = startQueryServer(
    nc,
    {
      repo,
      cache,
      namespaces,
      partitions: topology.partitions,
      now: Date.now,
      sleep: (ms) => delay(ms),
      resolveContent: (value) => resolveBlobBlocks(value, blobs),
    },
    logger,
    (op, seconds, ok) => metrics.queries.observe({ op, ok: String(ok) }, seconds),
    blobs,
  );

  const leases = createLeaseManager({
    kv: topology.kv.leases,
    role: "store",
    // One lease per stream group (`store.g.<g>`): the holder reads the group's stream once.
    partitions: topology.groups,
    leaseKey: storeGroupLeaseKey,
    workerId,
    ttlMs: topology.leaseTtlMs,
    logger,
    onAcquire: (group) => {
      workers.get(group)?.stop();
      workers.set(
        group,
        startGroupWorker({
          group,
          groups: topology.groups,
          partitions: topology.partitions,
          js,
          jsm,
          namespaces,
          projector,
          slots,
          logger,
          maxBatch: opts.maxBatch,
          onNoNamespace: healer.poke,
          onApplied: announce,
        }),
      );
      metrics.groups.set(workers.size);
    },
    onRelease: async (group, reason) => {
      const worker = workers.get(group);
      workers.delete(group);
      metrics.groups.set(workers.size);
      logger.info({ evt: "store_group_released", group, reason }, "stream group released");
      await worker?.stop();
    },
  });
  await leases.start();

  const loopDelay = monitorEventLoopDelay({ resolution: 20 });
  loopDelay.enable();
  let counted = { applied: 0, invalid: 0, gapRepairs: 0 };
  const lagTimer = setInterval(() => void updateLag(), 2_000);
  async function updateLag() {
    try {
      const { applied, invalid, gapRepairs } = projector.stats;
      metrics.applied.inc(applied - counted.applied);
      metrics.invalid.inc(invalid - counted.invalid);
      metrics.gapRepairs.inc(gapRepairs - counted.gapRepairs);
      counted = { applied, invalid, gapRepairs };
      const delay = loopDelay.percentile(99) / 1e9;
      loopDelay.reset();
      metrics.loopDelay.set(delay);
      if (delay > 1) logger.warn({ evt: "store_event_loop_delay", p99Seconds: delay }, "event loop delayed");
      const active = await namespaces.peek();
      if (!active || workers.size === 0) return;
      // One stream info per held group (cheap).
      for (const [g, worker] of workers) {
        const pending = worker.pending;
        const last = pending === 0 ? 0 : await streamLastSeq(jsm, eventStreamName(g, topology.groups));
        metrics.pending.set({ group: String(g) }, pending);
        metrics.lag.set({ group: String(g) }, pending === 0 ? 0 : Math.max(0, last - worker.appliedSeq));
      }
    } catch (err) {
      logger.debug({ evt: "store_lag_failed", err }, "lag update failed");
    }
  }

  logger.info(
    {
      evt: "store_started",
      workerId,
      partitions: topology.partitions,
      groups: topology.groups,
      prefix: opts.prefix,
      opsPort: ops.port,
    },
    "session store started",
  );

  return {
    workerId,
    ops,
    leases,
    held: () => [...workers.keys()].sort((a, b) => a - b),
    async stop() {
      clearInterval(lagTimer);
      loopDelay.disable();
      await leases.stop();
      await Promise.all([...workers.values()].map((w) => w.stop()));
      workers.clear();
      await healer.stop();
      await queries.close();
      await ncData.drain().catch(() => undefined);
      await nc.drain().catch(() => undefined);
      await redis.quit().catch(() => undefined);
      await ops.close();
      logger.info({ evt: "store_stopped", workerId }, "session store stopped");
    },
  };
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
