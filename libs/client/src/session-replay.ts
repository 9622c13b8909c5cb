// Replays with overrides (change 51), read from the client side: waiting for one to finish, a
// replay compared with its source, and the row a batch replay prints for it.
import {
  decideReplayTurn,
  diffSessionTurns,
  evolveSession,
  type FleetEvent,
  initialSessionState,
  type ReplayRecord,
  type SessionDiff,
  sessionTurns,
} from "@fleet/protocol";
import { FleetError } from "./errors.js";

/** Where a replay session stands, from its log. */
export interface ReplayProgress {
  /** What the session replays (`session_created.replayOf`); `undefined`: it is no replay. */
  replayOf: ReplayRecord | undefined;
  /** Every turn ran (or one was refused), and no run is open. */
  done: boolean;
  /** Turns that ran. */
  turnsRun: number;
  /** The refused turn's rejection, which ended the replay (a budget). */
  stopped: { index: number; code: string; reason: string } | undefined;
}

/** The progress of the replay `events` (a replay session's log, in order) show. Pure. */
export function replayProgressOf(events: readonly FleetEvent[]): ReplayProgress {
  const state = initialSessionState();
  for (const e of events) evolveSession(state, e);
  const step = decideReplayTurn(state);
  const replayOf = state.replay ?? undefined;
  const turnsRun = replayOf
    ? replayOf.turns.filter((_, k) => state.commands.get(`replay-turn-${k}`)?.outcome === "accepted").length
    : 0;
  let stopped: ReplayProgress["stopped"];
  if (step.kind === "done" && step.stopped) {
    const rejection = events.find((e) => e.type === "command_rejected" && e.commandId === step.stopped?.commandId);
    stopped = {
      index: step.stopped.index,
      code: rejection?.type === "command_rejected" ? rejection.code : "rejected",
      reason: rejection?.type === "command_rejected" ? rejection.reason : "",
    };
  }
  return { replayOf, done: step.kind === "done", turnsRun, stopped };
}

/**
 * Follows `events` (a live tail of a replay session from its start) until the replay is done.
 * Errors: `invalid_input` when the session turns out to be no replay; `timeout` when `signal` aborts first.
 */
export async function followReplay(events: AsyncIterable<{ event: FleetEvent }>, signal: AbortSignal) {
  const log: FleetEvent[] = [];
  const state = initialSessionState();
  for await (const { event } of events) {
    log.push(event);
    evolveSession(state, event);
    if (!state.tree.config) continue;
    if (!state.replay) throw new FleetError("invalid_input", "invalid", `session ${event.meta.sessionId} is no replay`);
    if (decideReplayTurn(state).kind === "done") return replayProgressOf(log);
  }
  if (signal.aborted) throw new FleetError("timeout", "timeout", "the replay did not finish in time");
  throw new FleetError("unavailable", "closed", "the connection closed before the replay finished");
}

/** One replayed session of a batch, as `fleet replay --sessions` prints it. */
export interface ReplayRow {
  source: string;
  replay: string;
  turns: number;
  /** Tool calls that differ from the source's (name, arguments or result), or that only one made. */
  divergedToolCalls: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  /** Assistant errors, a refused turn, or why the replay could not start. */
  errors: string[];
}

/** The row of a replay compared with its source. */
export function replayRowOf(
  source: string,
  replay: string,
  diff: SessionDiff,
  progress: ReplayProgress | undefined,
): ReplayRow {
  const turnsRun = progress?.turnsRun ?? 0;
  const replayed = diff.b.slice(Math.max(0, diff.b.length - turnsRun));
  const errors = replayed.flatMap((t) => t.errors);
  if (progress?.stopped)
    errors.push(`turn ${progress.stopped.index}: ${progress.stopped.code} ${progress.stopped.reason}`);
  return {
    source,
    replay,
    turns: turnsRun,
    divergedToolCalls: diff.divergedToolCalls,
    inputTokens: replayed.reduce((n, t) => n + t.inputTokens, 0),
    outputTokens: replayed.reduce((n, t) => n + t.outputTokens, 0),
    costUsd: replayed.reduce((n, t) => n + t.costUsd, 0),
    errors,
  };
}

/** Two logs compared turn by turn. */
export const diffSessionLogs = (a: readonly FleetEvent[], b: readonly FleetEvent[]): SessionDiff =>
  diffSessionTurns(sessionTurns(a), sessionTurns(b));
