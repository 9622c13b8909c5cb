// A session's events, live, in stream order: what `events()` and `eventRecords()` iterate.
import { decodeEvent, type FleetEvent } from "@fleet/protocol";
import { type ClientContext, eventStreamOf, eventSubjectOf, lastEventSeq } from "./client-context.js";
import { FleetError } from "./errors.js";
import { tailSubject } from "./event-tail.js";
import type { EventsOptions } from "./read-options.js";

/**
 * The first stream sequence to read for `opts.from`. `"new"` is fixed now (the call), not when the
 * iteration starts. Throws `invalid_input` at once for a bad `from`; the promise rejects
 * `unavailable` when the log's end cannot be read.
 */
export function startSeqOf(ctx: ClientContext, sessionId: string, opts: EventsOptions): Promise<number> {
  const from = opts.from ?? "start";
  const start: Promise<number> =
    from === "new" ? lastEventSeq(ctx, sessionId).then((s) => s + 1) : Promise.resolve(from === "start" ? 1 : from);
  start.catch(() => undefined);
  if (typeof from === "number" && (!Number.isInteger(from) || from < 1)) {
    throw new FleetError("invalid_input", "invalid", `events: from must be a positive integer, "start" or "new"`);
  }
  return start;
}

/**
 * The session's events from `start` on, each mapped by `item`; waits for new ones until
 * `opts.signal` aborts or the connection closes. Survives reconnects (no gap, no duplicate); an
 * undecodable record goes to `opts.onInvalid` and is skipped.
 */
export async function* iterateSessionEvents<T>(
  ctx: ClientContext,
  sessionId: string,
  start: Promise<number>,
  opts: EventsOptions,
  item: (seq: number, event: FleetEvent, data: Uint8Array) => T,
): AsyncGenerator<T> {
  const fromSeq = await start;
  const tail = tailSubject(ctx, eventStreamOf(ctx, sessionId), eventSubjectOf(ctx, sessionId), {
    fromSeq,
    ...(opts.signal ? { signal: opts.signal } : {}),
    onResume: (next) => opts.onResume?.(next),
  });
  for await (const record of tail) {
    const decoded = decodeEvent(record.data);
    if (!decoded.ok) {
      opts.onInvalid?.(record.seq, decoded.error);
      continue;
    }
    yield item(record.seq, decoded.value, record.data);
  }
}
