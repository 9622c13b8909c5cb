// What a loop worker is given and what it gives back (`startLoopWorker`, `./loop-worker.ts`).
import type { SessionConfig } from "@fleet/protocol";
import type { Logger } from "@fleet/runtime";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Registry } from "prom-client";
import type { EngineHooks, StreamFn } from "./engine/index.js";
import type { RetentionSettings } from "./lifecycle/retention-janitor.js";
import type { LoopMetrics } from "./metrics.js";
import type { RunTraceSink } from "./run-trace-sink.js";
import type { ActorDeps, ActorSettings } from "./session-actor.js";
import type { SubAgentSettings } from "./sub-agents/sub-agent-port.js";
import type { ToolRegistry } from "./tool-registry.js";

export interface LoopWorkerOptions {
  nc: NatsConnection;
  workerId: string;
  /** P and K to provision when the log has none yet (fixed once written; another value refuses to start). */
  partitions?: number | undefined;
  groups?: number | undefined;
  leaseTtlMs: number;
  shutdownGraceMs: number;
  sessionIdleMs: number;
  /** See ToolDispatcher: a call no runner claimed within this long fails. Default 30 s. */
  toolPickupMs?: number;
  providers: Readonly<Record<string, StreamFn>>;
  /** Context window and prices of a model (`ModelCatalog.info`); default Fleet's Anthropic table. */
  modelInfo?: ActorDeps["modelInfo"];
  pluginHooks?: readonly EngineHooks[];
  settings: Omit<ActorSettings, "defaults"> & { defaults: SessionConfig };
  logger: Logger;
  registry: Registry;
  now?: () => number;
  newId: () => string;
  /** Session lifecycle (PROTOCOL "Session lifecycle"). */
  lifecycle?: LoopLifecycleOptions;
  /**
   * A session's fold is stored every this many events (`FLEET_SNAPSHOT_EVERY`, PROTOCOL change 42);
   * 0: no snapshots (every load folds the whole log). Default DEFAULT_SNAPSHOT_EVERY.
   */
  snapshotEvery?: number;
  /** Live span export (change 46; `createRunTraceSink`); absent: no spans are made. */
  traces?: RunTraceSink;
  /**
   * The tenant's scheduler's tick (`FLEET_SCHEDULER_TICK_MS`, change 55): default 1000 ms. Every worker
   * contends for the scheduler lease; 0 (in-process tests only) starts none on this worker.
   */
  schedulerTickMs?: number;
  /** `FLEET_SCHEDULER_HALT_AFTER=fire_published` (crash tests). */
  schedulerHaltAfterPublish?: boolean;
  /** Sub-agents (change 57, `FLEET_SUBAGENT_*`): the `agent` tool and its limits; absent: no `agent` tool. */
  subAgents?: SubAgentSettings;
}

export interface LoopLifecycleOptions {
  /** Archives go to this directory; default object store `fleet_archive`. */
  archiveDir?: string;
  /** Retention (`FLEET_RETENTION_DAYS`): absent or `days` 0, none. */
  retention?: Omit<RetentionSettings, "idleMs" | "batchTimeoutMs"> & { days: number; batchTimeoutMs?: number };
  /** `FLEET_LIFECYCLE_HALT_AFTER` (crash tests). */
  haltAfter?: string;
  /** How long a deletion waits for a store consumer to exist before it takes none as deployed. */
  storeAbsentMs?: number;
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
  /** The retention janitor's pass, when this worker runs one (tests). */
  retentionPass(): Promise<void>;
}
