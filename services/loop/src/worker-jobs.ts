// A loop worker's tenant-wide jobs, each run by whichever worker holds its lease: the retention
// janitor (when `FLEET_RETENTION_DAYS` > 0) and the scheduler (when its tick is > 0).
import type { NatsConnection } from "@nats-io/transport-node";
import { retentionRequester, startRetentionJanitor } from "./lifecycle/retention-janitor.js";
import type { LoopLifecycleOptions } from "./loop-worker-options.js";
import type { LoopMetrics } from "./metrics.js";
import { startScheduler } from "./scheduler/scheduler.js";

/** What both jobs are given: the streams, the lease bucket they contend on, the topology, clock and log. */
type LeaseHolder = Pick<
  Parameters<typeof startScheduler>[0],
  "js" | "jsm" | "leases" | "workerId" | "leaseTtlMs" | "partitions" | "groups" | "now" | "logger"
>;

export interface WorkerJobsDeps {
  holder: LeaseHolder;
  nc: NatsConnection;
  newId: () => string;
  metrics: LoopMetrics;
  /** Absent or `days` 0: no janitor. */
  retention: LoopLifecycleOptions["retention"];
  /** 0: no scheduler on this worker (in-process tests only). */
  schedulerTickMs: number;
  schedulerHaltAfterPublish: boolean;
}

export interface WorkerJobs {
  /** The retention janitor, when this worker runs one. */
  readonly janitor: { pass(): Promise<void> } | undefined;
  stop(): Promise<void>;
}

/** Starts the janitor, then the scheduler (each contends for its lease); resolves once both started. */
export async function startWorkerJobs(deps: WorkerJobsDeps): Promise<WorkerJobs> {
  const { holder, retention } = deps;
  const janitor =
    retention && retention.days > 0
      ? startRetentionJanitor({
          ...holder,
          nc: deps.nc,
          settings: {
            idleMs: Math.round(retention.days * 86_400_000),
            batchSize: retention.batchSize,
            intervalMs: retention.intervalMs,
            batchTimeoutMs: retention.batchTimeoutMs ?? 600_000,
          },
          requester: retentionRequester(retention.days),
          metrics: deps.metrics,
        })
      : undefined;
  await janitor?.start();
  const scheduler =
    deps.schedulerTickMs > 0
      ? startScheduler({
          ...holder,
          tickMs: deps.schedulerTickMs,
          newId: deps.newId,
          haltAfterPublish: deps.schedulerHaltAfterPublish,
        })
      : undefined;
  await scheduler?.start();
  return {
    janitor,
    async stop() {
      await janitor?.stop();
      await scheduler?.stop();
    },
  };
}
