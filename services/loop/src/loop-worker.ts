import { KV_BUCKETS, OBJECT_STORES } from "@fleet/protocol";
import {
  applyTopology,
  createAgentStore,
  createBlobAccess,
  createLeaseManager,
  createStreamPublisher,
  type LeaseManager,
} from "@fleet/runtime";
import { jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { Objm } from "@nats-io/obj";
import { type ActorRegistry, createActorRegistry } from "./actor-registry.js";
import { createHookServers } from "./hook-servers.js";
import { createRemoteHookClient } from "./hooks.js";
import { startIdleEvictor } from "./idle-evictor.js";
import { purgeLegacySpend } from "./legacy-spend.js";
import { createDirectoryArchiveStore, createObjectArchiveStore } from "./lifecycle/archive-store.js";
import { createHaltPoint } from "./lifecycle/halt-point.js";
import type { LifecycleDeps } from "./lifecycle/lifecycle-deps.js";
import { createSpendLedger } from "./lifecycle/spend-ledger.js";
import type { LoopWorker, LoopWorkerOptions } from "./loop-worker-options.js";
import { createLoopMetrics } from "./metrics.js";
import { createOpenWorkIndex } from "./open-work/open-work-index.js";
import { type CommandDelivery, type PartitionIntake, startPartitionIntake } from "./partition-intake.js";
import { watchRunnerPresence } from "./runner-presence-view.js";
import { SessionActor } from "./session-actor.js";
import type { SnapshotSettings } from "./snapshots/session-load.js";
import { createSnapshotMetrics } from "./snapshots/snapshot-metrics.js";
import { createSnapshotStore, DEFAULT_SNAPSHOT_PART_BYTES } from "./snapshots/snapshot-store.js";
import { DEFAULT_SNAPSHOT_EVERY } from "./snapshots/snapshot-writer.js";
import { migrateSpendTotals } from "./spend-totals-migration.js";
import { createSubAgentPort } from "./sub-agents/sub-agent-port.js";
import { scanPartition } from "./takeover-scan.js";
import { watchTenantApprovalRules } from "./tenant-approval-rules.js";
import { watchTenantBudget } from "./tenant-budget-view.js";
import { createToolDispatcher, DEFAULT_TOOL_PICKUP_MS } from "./tool-dispatcher.js";
import { watchToolRegistry } from "./tool-registry.js";
import { startWorkerJobs } from "./worker-jobs.js";

/** Bytes of `fleet_blobs` objects a worker keeps in memory for its LLM calls. */
const BLOB_CACHE_BYTES = 64 * 1024 * 1024;

/**
 * One loop worker: claims a fair share of the partitions, consumes their commands, keeps one
 * SessionActor per active session, resumes runs it finds interrupted when it takes a partition over.
 */
export async function startLoopWorker(opts: LoopWorkerOptions): Promise<LoopWorker> {
  const now = opts.now ?? Date.now;
  const log = opts.logger.child({ workerId: opts.workerId });
  const topology = await applyTopology(opts.nc, {
    partitions: opts.partitions,
    groups: opts.groups,
    leaseTtlMs: opts.leaseTtlMs,
    logger: log,
  });
  const partitions = topology.partitions;
  const groups = topology.groups;
  // Leases run on the bucket's TTL as it exists (a different FLEET_LEASE_TTL_MS is reported as drift).
  const leaseTtlMs = topology.leaseTtlMs;
  log.info({ evt: "loop_topology", partitions, groups, leaseTtlMs, drift: topology.drift.length }, "topology applied");
  const js = jetstream(opts.nc);
  const publisher = createStreamPublisher(opts.nc);
  const jsm = topology.jsm;
  const metrics = createLoopMetrics(opts.registry);
  // Views of KV buckets: each watch is made again after a reconnect (see followKv).
  const follow = { statuses: () => opts.nc.status() };
  const tools = watchToolRegistry(
    topology.kv.tools,
    (key, error) => log.warn({ key, error }, "invalid tool registration"),
    follow,
  );
  // Runners heartbeat every TTL/3 of the bucket as it exists (whoever created it chose the TTL).
  const presenceTtlMs = (await topology.kv.leases.status()).ttl || 15_000;
  // Presence is read again every third of its TTL too: a stale view fails calls.
  const runners = watchRunnerPresence(topology.kv.leases, {
    ttlMs: presenceTtlMs,
    now,
    follow: { ...follow, resyncMs: Math.max(1_000, Math.floor(presenceTtlMs / 3)) },
  });
  // Before the view reads the totals: those of a deployment from before change 60 are in `fleet_spend`.
  await migrateSpendTotals(topology.kv.spend, topology.kv.spendTotals, jsm, log);
  const tenantBudget = watchTenantBudget({
    budgets: topology.kv.budgets,
    spend: topology.kv.spend,
    totals: topology.kv.spendTotals,
    publisher,
    jsm,
    logger: log,
    now,
    follow,
  });
  void purgeLegacySpend(jsm, log);
  const tenantApprovalRules = watchTenantApprovalRules(
    topology.kv.config,
    (error) =>
      log.warn({ evt: "approval_rules_invalid", error }, "the tenant's approval rules are invalid; none apply"),
    follow,
  );
  const viewsFrom = now();
  log.info({ evt: "loop_start_views" }, "reading tool registry, runner presence, tenant budgets and approval rules");
  await Promise.all([tools.ready, runners.ready, tenantBudget.ready, tenantApprovalRules.ready]);
  log.info({ evt: "loop_start_views_ready", ms: now() - viewsFrom }, "views ready");
  const dispatcher = createToolDispatcher({
    nc: opts.nc,
    publisher,
    jsm,
    now,
    runnerAvailable: (toolName) => runners.serves(toolName),
    awaitRunner: (toolName, ms) => runners.whenServed(toolName, ms),
    // A runner writes its presence on reconnect, and a restarted one once the bus answers (leader
    // elections can take seconds): a call waits for it as long as for a pickup.
    runnerGraceMs: Math.max(2 * presenceTtlMs, opts.toolPickupMs ?? DEFAULT_TOOL_PICKUP_MS),
    ...(opts.toolPickupMs !== undefined ? { pickupTimeoutMs: opts.toolPickupMs } : {}),
  });
  const remoteHooks = createRemoteHookClient(opts.nc, {
    timeoutMs: opts.settings.hookTimeoutMs,
    recheckMs: opts.settings.hookRecheckMs ?? 1_000,
    now,
  });
  const hookServerNames = opts.settings.hookServers ?? [];
  const hookServers = hookServerNames.length > 0 ? createHookServers(remoteHooks.ask, hookServerNames) : undefined;
  const snapshotEvery = opts.snapshotEvery ?? DEFAULT_SNAPSHOT_EVERY;
  // Each part of a snapshot is one message: 64 KiB under the server's max_payload at most.
  const maxPayload = opts.nc.info?.max_payload ?? 1024 * 1024;
  const snapshotStore = createSnapshotStore(
    await new Kvm(opts.nc).open(KV_BUCKETS.snapshots.name),
    jsm,
    Math.max(1024, Math.min(DEFAULT_SNAPSHOT_PART_BYTES, maxPayload - 64 * 1024)),
  );
  const snapshots: SnapshotSettings | undefined =
    snapshotEvery > 0
      ? { store: snapshotStore, every: snapshotEvery, metrics: createSnapshotMetrics(opts.registry) }
      : undefined;
  const lifecycleOpts = opts.lifecycle ?? {};
  const lifecycle: LifecycleDeps = {
    js,
    jsm,
    groups,
    publisher,
    ledger: createSpendLedger(topology.kv.budgets, tenantBudget),
    archive: lifecycleOpts.archiveDir
      ? createDirectoryArchiveStore(lifecycleOpts.archiveDir)
      : createObjectArchiveStore(await new Objm(opts.nc).open(OBJECT_STORES.archive.name), jsm),
    blobs: await new Objm(opts.nc).open(OBJECT_STORES.blobs.name),
    // Removed with a deleted session even when this worker makes none (another one may have).
    snapshots: snapshotStore,
    workerId: opts.workerId,
    now,
    halt: createHaltPoint(lifecycleOpts.haltAfter ?? "", log),
    logger: log,
    metrics,
    ...(lifecycleOpts.storeAbsentMs !== undefined ? { storeAbsentMs: lifecycleOpts.storeAbsentMs } : {}),
  };
  // Content by reference read for LLM calls is kept (objects never change): a session's image is
  // read once, not at every turn.
  const blobs = createBlobAccess(opts.nc, { cacheBytes: BLOB_CACHE_BYTES });
  const agents = createAgentStore(await new Kvm(opts.nc).open(KV_BUCKETS.agents.name));
  const openWork = createOpenWorkIndex({ publisher, jsm, workerId: opts.workerId, now });
  const subAgents = opts.subAgents
    ? createSubAgentPort({
        nc: opts.nc,
        publisher,
        dispatcher,
        agents,
        partitions,
        events: { jsm, groups },
        settings: opts.subAgents,
        now,
        logger: log,
      })
    : undefined;
  const intakes = new Map<number, PartitionIntake>();
  const epochs = new Map<number, number>();
  let stopping = false;
  let ready = false;

  const actors: ActorRegistry = createActorRegistry({
    // A loaded session first finishes what its log shows as begun (a run, a compaction, writes).
    load: async (sessionId, partition, loadId) => {
      const epoch = epochs.get(partition) ?? 0;
      const actor = await SessionActor.load({
        nc: opts.nc,
        js,
        publisher,
        jsm,
        sessionId,
        partition,
        partitions,
        groups,
        workerId: opts.workerId,
        epoch,
        writeGate: () => leases.writable(partition, epoch),
        now,
        newId: opts.newId,
        providers: opts.providers,
        ...(opts.modelInfo ? { modelInfo: opts.modelInfo } : {}),
        dispatcher,
        registry: tools,
        pluginHooks: opts.pluginHooks ?? [],
        remoteHooks,
        ...(hookServers ? { hookServers } : {}),
        tenantBudget,
        tenantApprovalRules,
        agents,
        ...(subAgents ? { subAgents } : {}),
        blobs,
        settings: opts.settings,
        logger: log,
        metrics,
        onDead: (sid, why) => {
          // An actor let go earlier (a lost lease) may die later: the session's entry is then another load's.
          if (actors.drop(sid, loadId))
            log.warn({ evt: "session_dropped", sessionId: sid, why, loadId }, "session dropped");
          else log.info({ evt: "released_actor_died", sessionId: sid, why, loadId }, "an actor let go earlier died");
        },
        lifecycle,
        onRemoved: (sid) => void actors.drop(sid, loadId),
        ...(snapshots ? { snapshots } : {}),
        ...(opts.traces ? { traces: opts.traces } : {}),
        openWork,
      });
      await actor.recover();
      return actor;
    },
    onDrop: (sessionId) => dispatcher.forget(sessionId),
    onLoadFailed: (sessionId, err) => log.warn({ err, sessionId }, "session load failed"),
  });

  async function handle(delivery: CommandDelivery) {
    log.debug(
      { evt: "command_pulled", sessionId: delivery.sessionId, ref: delivery.commandRef, streamSeq: delivery.streamSeq },
      "command pulled",
    );
    let actor: SessionActor;
    try {
      actor = await actors.get(delivery.sessionId, delivery.partition);
    } catch (err) {
      log.warn({ err, sessionId: delivery.sessionId }, "could not load session; command will be redelivered");
      delivery.msg.nak(1_000);
      return;
    }
    await actor.handle(delivery);
  }

  /**
   * Lets go of the sessions (of `partition`, or all) that carry out a deletion, archive or restore:
   * their commands wait for it, so stopping an intake would wait as long; the next owner resumes
   * them from the log.
   */
  async function detachLifecycles(partition?: number) {
    for (const a of actors.entries()) {
      if (partition !== undefined && a.partition !== partition) continue;
      const actor = await a.actor.catch(() => undefined);
      if (!actor?.inLifecycle) continue;
      actor.detach();
      actors.drop(a.sessionId, a.loadId);
    }
  }

  async function releasePartition(partition: number, graceMs: number) {
    const intake = intakes.get(partition);
    intakes.delete(partition);
    await detachLifecycles(partition);
    await intake?.stop();
    const mine = actors.entries().filter((a) => a.partition === partition);
    await Promise.all(
      mine.map(async (a) => {
        const actor = await a.actor.catch(() => undefined);
        if (actor && graceMs > 0) await actor.waitForIdle(graceMs);
        actor?.detach();
        actors.drop(a.sessionId, a.loadId);
      }),
    );
  }

  const leases: LeaseManager = createLeaseManager({
    kv: topology.kv.leases,
    role: "loop",
    partitions,
    workerId: opts.workerId,
    ttlMs: leaseTtlMs,
    logger: log,
    now,
    onAcquire: async (partition, epoch) => {
      epochs.set(partition, epoch);
      metrics.leasesHeld.inc();
      const intake = await startPartitionIntake({
        js,
        jsm,
        partition,
        partitions,
        ackWaitMs: leaseTtlMs,
        handle,
        onUndeliverable: (subject) => {
          metrics.undeliverableCommands.inc();
          log.warn({ subject, partition }, "undeliverable command dropped");
        },
        onForeign: (subject, streamSeq, consumer) =>
          log.warn(
            { evt: "intake_foreign", partition, subject, streamSeq, consumer },
            "another partition's command left stored",
          ),
        onError: (err, d) => log.error({ err, sessionId: d.sessionId }, "command handling failed"),
        onReopen: (why) => log.warn({ evt: "intake_reopen", partition, why }, "command consumer reopened"),
        onStalled: (counts) =>
          log.warn({ evt: "intake_stalled", partition, ...counts }, "commands stuck pending; consumer made again"),
        onSwept: (seqs) =>
          log.warn({ evt: "intake_swept", partition, seqs }, "skipped commands read from the stream and handled"),
        now,
      });
      intakes.set(partition, intake);
      const scanStart = now();
      void scanPartition({
        jsm,
        index: openWork,
        partition,
        groups,
        active: () => !stopping && intakes.has(partition),
        recover: async (sessionId) => {
          log.debug({ evt: "takeover_recover", partition, sessionId }, "session listed by the takeover scan");
          return (await actors.get(sessionId, partition)).settleIndex();
        },
        onError: (err, what) => log.warn({ err, what }, "recovery failed; trying again"),
      })
        .then((o) => log.info({ evt: "takeover_scanned", partition, ...o, ms: now() - scanStart }, "partition scanned"))
        .catch((err) => log.warn({ err, partition }, "recovery scan failed"));
    },
    onRelease: async (partition, reason) => {
      metrics.leasesHeld.dec();
      await releasePartition(partition, reason === "rebalance" ? opts.shutdownGraceMs : 0);
    },
  });
  log.info({ evt: "loop_start_claiming", partitions }, "claiming partitions");
  await leases.start();
  log.info({ evt: "loop_start_claimed", held: leases.held().size }, "first lease pass done");
  const jobs = await startWorkerJobs({
    holder: {
      js,
      jsm,
      leases: topology.kv.leases,
      workerId: opts.workerId,
      leaseTtlMs,
      partitions,
      groups,
      now,
      logger: log,
    },
    nc: opts.nc,
    newId: opts.newId,
    metrics,
    retention: lifecycleOpts.retention,
    schedulerTickMs: opts.schedulerTickMs ?? 1_000,
    schedulerHaltAfterPublish: opts.schedulerHaltAfterPublish ?? false,
  });
  ready = true;

  const evictor = startIdleEvictor({ actors, idleMs: opts.sessionIdleMs, now });

  return {
    workerId: opts.workerId,
    partitions,
    metrics,
    tools,
    held: () => [...leases.held().keys()].sort((a, b) => a - b),
    sessions: () => actors.keys(),
    isReady: () => ready && !stopping,
    retentionPass: () => jobs.janitor?.pass() ?? Promise.resolve(),
    async stop() {
      if (stopping) return;
      stopping = true;
      evictor.stop();
      await jobs.stop();
      await detachLifecycles();
      await Promise.all([...intakes.values()].map((i) => i.stop()));
      // Runs get one shared grace period to finish, then every partition is released at once.
      await Promise.all(
        actors.entries().map(async (a) => (await a.actor.catch(() => undefined))?.waitForIdle(opts.shutdownGraceMs)),
      );
      await leases.stop();
      tools.stop();
      runners.stop();
      tenantBudget.stop();
      tenantApprovalRules.stop();
      dispatcher.close();
      publisher.close();
    },
  };
}
