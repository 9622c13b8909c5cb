/** How an MCP server that died is restarted: the first wait, doubled each time up to the cap. */
export interface RestartBackoff {
  baseMs: number;
  capMs: number;
}

export const DEFAULT_RESTART_BACKOFF: RestartBackoff = { baseMs: 500, capMs: 30_000 };

/** The wait before restart number `attempt` (0-based, reset once a start succeeds): `baseMs * 2^attempt`, at most `capMs`. */
export function decideRestartDelay(attempt: number, backoff: RestartBackoff = DEFAULT_RESTART_BACKOFF): number {
  return Math.min(backoff.capMs, backoff.baseMs * 2 ** Math.min(Math.max(0, attempt), 30));
}
