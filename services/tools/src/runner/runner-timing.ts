/**
 * The runner's timing rules, all derived from the presence TTL (bucket `fleet_leases`): how often
 * presence is rewritten, the `ack_wait` of the tool consumers, and how often a running call's
 * message is marked in progress (`working`) so JetStream does not hand it to another runner.
 */

/** The presence TTL when the bucket has none (a dead runner then stays live forever; the runner warns). */
export const DEFAULT_PRESENCE_TTL_MS = 15_000;

/** The TTL that decides whether a runner is gone: the bucket's, else `DEFAULT_PRESENCE_TTL_MS`. */
export const presenceTtlOf = (bucketTtlMs: number | undefined): number => bucketTtlMs || DEFAULT_PRESENCE_TTL_MS;

/** Presence is rewritten every third of the TTL (at least every 100 ms); every 5 s without a TTL. */
export const presenceHeartbeatMs = (bucketTtlMs: number | undefined): number =>
  bucketTtlMs ? Math.max(100, Math.floor(bucketTtlMs / 3)) : 5_000;

/**
 * `ack_wait` of the `tool-<name>` consumers: the configured one, else the presence TTL, so a dead
 * runner's call comes back about when its presence expires.
 */
export const consumerAckWaitMs = (configuredMs: number | undefined, ttlMs: number): number => configuredMs ?? ttlMs;

/** Whether `ensureConsumer`'s drift report says the consumer has another `ack_wait` (then this runner's is applied). */
export const isAckWaitDrift = (drift: readonly string[]): boolean =>
  drift.some((line) => line.includes(": ack_wait is "));

/**
 * How often a running call is marked in progress: a third of the shortest `ack_wait` (nanoseconds;
 * the server's 30 s when unset) of the runner's consumers, at least 100 ms, at most 10 s.
 */
export function workingIntervalMs(ackWaitsNanos: readonly (number | undefined)[]): number {
  let interval = 10_000;
  for (const nanos of ackWaitsNanos) {
    interval = Math.min(interval, Math.max(100, Math.floor((nanos ?? 30_000_000_000) / 1_000_000 / 3)));
  }
  return interval;
}
