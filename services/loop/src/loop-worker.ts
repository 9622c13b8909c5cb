import { decodeEvent, type SessionConfig, STREAMS, subjects } from "@fleet/protocol";
import {
  applyTopology,
  createLeaseManager,
  createStreamPublisher,
  type LeaseManager,
  type Logger,
} from "@fleet/runtime";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Registry } from "prom-client";
import type { EngineHooks, StreamFn } from "./engine/index.js";
import { createRemoteHookClient } from "./hooks.js";
import { createLoopMetrics, type LoopMetrics } from "./metrics.js";
import { type CommandDelivery, type PartitionIntake, startPartitionIntake } from "./partition-intake.js";
import { watchRunnerPresence } from "./runner-presence-view.js";
import { type ActorSettings, SessionActor } from "./session-actor.js";
import { mayNeedRecovery } from "./takeover-scan.js";
import { createToolDispatcher } from "./tool-dispatcher.js";
import { type ToolRegistry, watchToolRegistry } from "./tool-registry.js";

export interface LoopWorkerOptions {
  nc: NatsConnection;
  workerId: string;
  partitions: number;
  leaseTtlMs: number;
  shutdownGraceMs: number;
  sessionIdleMs: number;
  /** See ToolDispatcher: a call no runner claimed within this long fails. Default 30 s. */
  toolPickupMs?: number;
  providers: Readonly<Record<string, StreamFn>>;
  pluginHooks?: readonly EngineHooks[];
  settings: Omit<ActorSettings, "defaults"> & { defaults: SessionConfig };
  logger: Logger;
  registry: Registry;
  now?: () => number;
  newId: () => string;
}

export interface LoopWorker {
  readonly workerId: string;
  readonly partitions: number;
  readonly metrics: LoopMetrics;
  readonly tools: ToolRegistry;
  /** Partitions this worker holds. */
  held(): number[];
  /** Sessions loaded on this worker. */
  sessions(): string[];
  isReady(): boolean;
  /** SIGTERM path: stop taking commands, let runs finish (up to the grace), release the leases. */
  stop(): Promise<void>;
}

/**
 * One loop worker: claims a fair share of the partitions, consumes their commands, keeps one
 * SessionActor per active session, resumes runs it finds interrupted when it takes a partition over.
 */
export async function startLoopWorker(opts: LoopWorkerOptions): Promise<LoopWorker> {
  const now = opts.now ?? Date.now;
  const log = opts.logger.child({ workerId: opts.workerId });
  const topology = await applyTopology(opts.nc, {
    partitions: opts.partitions,
    leaseTtlMs: opts.leaseTtlMs,
    logger: log,
  });
  const partitions = topology.partitions;
  const js = jetstream(opts.nc);
  const publisher = createStreamPublisher(opts.nc);
  const jsm = topology.jsm;
  const metrics = createLoopMetrics(opts.registry);
  const tools = watchToolRegistry(topology.kv.tools, (key, error) =>
    log.warn({ key, error }, "invalid tool registration"),
  );
  // Runners heartbeat every TTL/3 of the bucket as it exists (whoever created it chose the TTL).
  const presenceTtlMs = (await topology.kv.leases.status()).ttl || 15_000;
  const runners = watchRunnerPresence(topology.kv.leases, { ttlMs: presenceTtlMs, now });
  await Promise.all([tools.ready, runners.ready]);
  const dispatcher = createToolDispatcher({
    nc: opts.nc,
    publisher,
    jsm,
    now,
    runnerAvailable: (toolName) => runners.serves(toolName),
    ...(opts.toolPickupMs !== undefined ? { pickupTimeoutMs: opts.toolPickupMs } : {}),
  });
  const remoteHooks = createRemoteHookClient(opts.nc, {
    timeoutMs: opts.settings.hookTimeoutMs,
    recheckMs: opts.settings.hookRecheckMs ?? 1_000,
    now,
  });
  const actors = new Map<string, { partition: number; actor: Promise<SessionActor> }>();
  const intakes = new Map<number, PartitionIntake>();
  const epochs = new Map<number, number>();
  let stopping = false;
  let ready = false;

  const dropActor = (sessionId: string) => {
    actors.delete(sessionId);
    dispatcher.forget(sessionId);
  };

  function actorFor(sessionId: string, partition: number): Promise<SessionActor> {
    const existing = actors.get(sessionId);
    if (existing) return existing.actor;
    const actor = SessionActor.load({
      nc: opts.nc,
      js,
      publisher,
      jsm,
      sessionId,
      partition,
      partitions,
      workerId: opts.workerId,
      epoch: epochs.get(partition) ?? 0,
      now,
      newId: opts.newId,
      providers: opts.providers,
      dispatcher,
      registry: tools,
      pluginHooks: opts.pluginHooks ?? [],
      remoteHooks,
      settings: opts.settings,
      logger: log,
      metrics,
      onDead: (sid, why) => {
        log.warn({ evt: "session_dropped", sessionId: sid, why }, "session dropped");
        dropActor(sid);
      },
    });
    // A loaded session first finishes what its log shows as begun (a run, a compaction, writes).
    const ready = actor.then(async (a) => {
      await a.recover();
      return a;
    });
    actors.set(sessionId, { partition, actor: ready });
    ready.catch((err) => {
      log.warn({ err, sessionId }, "session load failed");
      dropActor(sessionId);
    });
    return ready;
  }

  async function handle(delivery: CommandDelivery) {
    let actor: SessionActor;
    try {
      actor = await actorFor(delivery.sessionId, delivery.partition);
    } catch (err) {
      log.warn({ err, sessionId: delivery.sessionId }, "could not load session; command will be redelivered");
      delivery.msg.nak(1_000);
      return;
    }
    await actor.handle(delivery);
  }

  /**
   * Loads every session of `partition` whose log may hold unfinished work (`mayNeedRecovery` of its
   * last event); loading one finishes that work (`SessionActor.recover`).
   */
  async function recoverPartition(partition: number) {
    const info = await jsm.streams.info(STREAMS.events.name, {
      subjects_filter: subjects.eventsOfPartition(partition),
    });
    const subjectsMap = (info.state.subjects ?? {}) as Record<string, number>;
    for (const subject of Object.keys(subjectsMap)) {
      if (stopping || !intakes.has(partition)) return;
      const last = await jsm.streams.getMessage(STREAMS.events.name, { last_by_subj: subject }).catch(() => null);
      if (!last) continue;
      const event = decodeEvent(last.data);
      if (!event.ok || !mayNeedRecovery(event.value)) continue;
      try {
        await actorFor(event.value.meta.sessionId, partition);
      } catch (err) {
        log.warn({ err, subject }, "recovery failed");
      }
    }
  }

  async function releasePartition(partition: number, graceMs: number) {
    const intake = intakes.get(partition);
    intakes.delete(partition);
    await intake?.stop();
    const mine = [...actors.entries()].filter(([, a]) => a.partition === partition);
    await Promise.all(
      mine.map(async ([sessionId, a]) => {
        const actor = await a.actor.catch(() => undefined);
        if (actor && graceMs > 0) await actor.waitForIdle(graceMs);
        actor?.detach();
        dropActor(sessionId);
      }),
    );
  }

  const leases: LeaseManager = createLeaseManager({
    kv: topology.kv.leases,
    role: "loop",
    partitions,
    workerId: opts.workerId,
    ttlMs: opts.leaseTtlMs,
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
        ackWaitMs: opts.leaseTtlMs,
        handle,
        onUndeliverable: (subject) => {
          metrics.undeliverableCommands.inc();
          log.warn({ subject }, "undeliverable command dropped");
        },
        onError: (err, d) => log.error({ err, sessionId: d.sessionId }, "command handling failed"),
      });
      intakes.set(partition, intake);
      void recoverPartition(partition).catch((err) => log.warn({ err, partition }, "recovery scan failed"));
    },
    onRelease: async (partition, reason) => {
      metrics.leasesHeld.dec();
      await releasePartition(partition, reason === "rebalance" ? opts.shutdownGraceMs : 0);
    },
  });
  await leases.start();
  ready = true;

  const evictTimer = setInterval(
    async () => {
      for (const [sessionId, a] of actors) {
        const actor = await a.actor.catch(() => undefined);
        if (actor && !actor.isRunning && now() - actor.lastUsed > opts.sessionIdleMs) {
          actor.detach();
          dropActor(sessionId);
        }
      }
    },
    Math.min(30_000, opts.sessionIdleMs),
  );
  evictTimer.unref();

  return {
    workerId: opts.workerId,
    partitions,
    metrics,
    tools,
    held: () => [...leases.held().keys()].sort((a, b) => a - b),
    sessions: () => [...actors.keys()],
    isReady: () => ready && !stopping,
    async stop() {
      if (stopping) return;
      stopping = true;
      clearInterval(evictTimer);
      await Promise.all([...intakes.values()].map((i) => i.stop()));
      // Runs get one shared grace period to finish, then every partition is released at once.
      await Promise.all(
        [...actors.values()].map(async (a) =>
          (await a.actor.catch(() => undefined))?.waitForIdle(opts.shutdownGraceMs),
        ),
      );
      await leases.stop();
      tools.stop();
      runners.stop();
      dispatcher.close();
      publisher.close();
    },
  };
}
