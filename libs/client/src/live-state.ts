// `state()`: a session folded live, resolved once it has caught up with the log as it was at the call.
import { type ClientContext, lastEventSeq } from "./client-context.js";
import { FleetError } from "./errors.js";
import { LiveSession } from "./live-session.js";
import type { SessionEventItem } from "./read-options.js";
import { iterateSessionEvents } from "./session-events.js";

/**
 * Opens a `LiveSession` of `sessionId` and resolves once the fold has applied the last event that
 * existed at the call. Errors: `timeout` when not caught up within `timeoutMs` (default 30 s),
 * `unavailable` when the reading ends first; the live session is closed then.
 */
export async function openLiveState(
  ctx: ClientContext,
  sessionId: string,
  opts: { signal?: AbortSignal; timeoutMs?: number },
): Promise<LiveSession> {
  const target = await lastEventSeq(ctx, sessionId);
  const abort = new AbortController();
  opts.signal?.addEventListener("abort", () => abort.abort(), { once: true });
  const live = new LiveSession(sessionId, abort);
  // The events up to `target` are folded at once (linear in the log's length), later ones one by
  // one. Reading `target`, or an undecodable record at or past it, ends the catch-up.
  const backlog: SessionEventItem[] = [];
  let caught = target === 0;
  let settle: (err?: Error) => void = () => undefined;
  const caughtUp = new Promise<void>((resolve, reject) => {
    settle = (err) => (err ? reject(err) : resolve());
  });
  const catchUp = (seq: number) => {
    if (caught || seq < target) return;
    caught = true;
    live.catchUp(backlog.splice(0));
    settle();
  };
  if (caught) settle();
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const timer = setTimeout(
    () => settle(new FleetError("timeout", "timeout", `session ${sessionId}: not caught up within ${timeoutMs} ms`)),
    timeoutMs,
  );
  void (async () => {
    try {
      const items = iterateSessionEvents(
        ctx,
        sessionId,
        Promise.resolve(1),
        { signal: abort.signal, onInvalid: (seq) => catchUp(seq) },
        (seq, event): SessionEventItem => ({ seq, event }),
      );
      for await (const item of items) {
        if (caught) live.apply(item.seq, item.event);
        else {
          backlog.push(item);
          catchUp(item.seq);
        }
      }
      settle(new FleetError("unavailable", "closed", `session ${sessionId}: live state closed`));
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      live.fail(error);
      settle(error);
    }
  })();
  try {
    await caughtUp;
  } catch (err) {
    live.close();
    throw err;
  } finally {
    clearTimeout(timer);
  }
  return live;
}
