import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import type { InflightCalls } from "./inflight-calls.js";

/**
 * The shutdown of running calls: waits up to `graceMs` for them to finish, then aborts the rest
 * with cause `shutdown` (their results are settled by `decideSettlement`) and waits up to
 * `abortGraceMs` + 5 s more. Resolves when none is left or the time is up.
 */
export async function drainCalls(opts: {
  calls: InflightCalls;
  graceMs: number;
  abortGraceMs: number;
  now: () => number;
  logger: Pick<Logger, "warn">;
}): Promise<void> {
  const { calls, now } = opts;
  const graceEnd = now() + opts.graceMs;
  while (calls.size() > 0 && now() < graceEnd) await sleep(20);
  if (calls.size() === 0) return;
  opts.logger.warn({ evt: "runner_abort_running", calls: calls.size() }, "grace over: aborting running calls");
  calls.abortAll("shutdown");
  const abortEnd = now() + opts.abortGraceMs + 5_000;
  while (calls.size() > 0 && now() < abortEnd) await sleep(20);
}
