// The gateway's account of writes JetStream refused for lack of storage: counted each, logged once per outage.
import type { Logger } from "pino";
import type { GatewayMetrics } from "./metrics.js";

/** How often, at most, a continuing outage is logged again (with the refusals counted since). */
export const STORAGE_ALARM_EVERY_MS = 30_000;

/**
 * `refused(route)` counts a request answered `storage_full` (`fleet_gateway_publishes_refused_total`)
 * and logs a warning when refusals start; while they go on, at most one line per `everyMs`, with
 * how many were refused since the previous line.
 */
export function createStorageAlarm(opts: {
  logger: Pick<Logger, "warn">;
  metrics: Pick<GatewayMetrics, "publishesRefused">;
  now: () => number;
  everyMs?: number;
}): { refused(route: string): void } {
  const everyMs = opts.everyMs ?? STORAGE_ALARM_EVERY_MS;
  let loggedAt: number | undefined;
  let unlogged = 0;
  return {
    refused(route) {
      opts.metrics.publishesRefused.inc({ route });
      unlogged++;
      const now = opts.now();
      if (loggedAt !== undefined && now - loggedAt < everyMs) return;
      opts.logger.warn(
        { evt: "storage_full", route, refused: unlogged },
        "JetStream refused a write: the event store is full (answered 503 storage_full)",
      );
      loggedAt = now;
      unlogged = 0;
    },
  };
}
