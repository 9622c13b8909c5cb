// `replay()`: a session folded from its log up to a stream sequence, optionally onto an earlier replay.
import { decodeEvent, foldSessionSpend, initialSessionSpend } from "@fleet/protocol";
import { readSubject } from "@fleet/runtime";
import { type ClientContext, eventStreamOf, eventSubjectOf, streamUnavailable } from "./client-context.js";
import { FleetError, isFleetError } from "./errors.js";
import type { ReplayResult, SessionEventItem } from "./read-options.js";
import { emptySessionView, foldSessionViewEvents } from "./session-view.js";

/**
 * The agent state and session tree as they stood at stream sequence `toSeq` (default: now).
 * `from`: an earlier replay of the same session (never changed); only the events after `from.seq`
 * are read and folded onto it, and `events` / `invalid` count only those.
 * Errors: `invalid_input` for a bad `toSeq` or one before `from.seq`; `unavailable` when unreadable.
 */
export async function replaySession(
  ctx: ClientContext,
  sessionId: string,
  opts: { toSeq?: number; from?: ReplayResult },
): Promise<ReplayResult> {
  if (opts.toSeq !== undefined && (!Number.isInteger(opts.toSeq) || opts.toSeq < 0)) {
    throw new FleetError("invalid_input", "invalid", "replay: toSeq must be a non-negative integer");
  }
  const applied: SessionEventItem[] = [];
  const invalid: { seq: number; error: string }[] = [];
  const start: ReplayResult = opts.from ?? {
    ...emptySessionView(),
    events: 0,
    invalid: [],
    spend: initialSessionSpend(),
  };
  if (opts.toSeq !== undefined && opts.toSeq <= start.seq) {
    if (opts.toSeq < start.seq) throw new FleetError("invalid_input", "invalid", "replay: toSeq is before from.seq");
    return { ...start, events: 0, invalid };
  }
  try {
    const records = readSubject(ctx.js, ctx.jsm, eventStreamOf(ctx, sessionId), eventSubjectOf(ctx, sessionId), {
      ...(start.seq > 0 ? { fromSeq: start.seq + 1 } : {}),
      ...(opts.toSeq !== undefined ? { toSeq: opts.toSeq } : {}),
    });
    for await (const record of records) {
      const decoded = decodeEvent(record.data);
      if (decoded.ok) applied.push({ seq: record.seq, event: decoded.value });
      else invalid.push({ seq: record.seq, error: decoded.error });
    }
  } catch (err) {
    if (isFleetError(err)) throw err;
    throw streamUnavailable(err);
  }
  const spend = structuredClone(start.spend);
  for (const { event } of applied) foldSessionSpend(spend, event);
  return { ...foldSessionViewEvents(start, applied), events: applied.length, invalid, spend };
}
