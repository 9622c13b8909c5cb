/** Failed attempts after which publishing a final record gives up (about a minute of backoff). */
export const MAX_RESULT_ATTEMPTS = 30;

/**
 * After the `attempt`-th (0-based) failed publish of a final record: try again after `delayMs`
 * (50 ms doubling, capped at 2 s), or give up when the runner is hard-stopped or
 * `MAX_RESULT_ATTEMPTS` failed (the call then goes back to the queue and a redelivery retries).
 */
export function decideResultRetry(
  attempt: number,
  hardStopped: boolean,
): { retry: true; delayMs: number } | { retry: false } {
  if (hardStopped || attempt >= MAX_RESULT_ATTEMPTS) return { retry: false };
  return { retry: true, delayMs: Math.min(2_000, 50 * 2 ** attempt) };
}
