// The tenant's change feed (PROTOCOL change 49): which sessions' logs grew and whether pending
// approvals may have changed, coalesced, for views that refresh from the store's indexes when
// something changed instead of on a timer. Live only: it subscribes to the events as they are
// appended while someone listens, and costs in proportion to the fleet's activity, never its history.
import { parseEventSubject, parseLifecycleSubject, subjects } from "@fleet/protocol";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { z } from "zod";

/** What changed in one window: the sessions whose log grew (or were deleted, archived, restored). */
export interface ChangeBatch {
  sessions: string[];
  /** An approval may have been asked for, answered or dropped (its run or session ended). */
  approvals: boolean;
}

export type ChangeListener = (batch: ChangeBatch) => void;

export interface ChangeFeed {
  /** Adds a listener; the returned function removes it. The first one subscribes, the last one's leave unsubscribes. */
  join(listener: ChangeListener): () => void;
  readonly listeners: number;
}

/** Event types after which a session's pending approvals may differ. */
const APPROVAL_TYPES = new Set(["tool_approval_requested", "tool_approval_resolved", "agent_end", "session_deleting"]);
const TypeOnly = z.looseObject({ type: z.string() });
const decoder = new TextDecoder();

/**
 * The change one appended message makes (pure): its session, and whether approvals may have
 * changed. `null` for a subject that is not a session's event or lifecycle record.
 */
export function changeOf(subject: string, data: Uint8Array): { sessionId: string; approvals: boolean } | null {
  const lifecycle = parseLifecycleSubject(subject);
  if (lifecycle) return { sessionId: lifecycle, approvals: true };
  const event = parseEventSubject(subject);
  if (!event) return null;
  let type = "";
  try {
    const parsed = TypeOnly.safeParse(JSON.parse(decoder.decode(data)));
    if (parsed.success) type = parsed.data.type;
  } catch {
    // Not JSON: the session still changed.
  }
  return { sessionId: event.sessionId, approvals: APPROVAL_TYPES.has(type) };
}

/** `windowMs`: changes are sent at most once per window, the first `windowMs` after it opens. */
export function createChangeFeed(nc: NatsConnection, opts: { windowMs: number; logger: Logger }): ChangeFeed {
  const listeners = new Set<ChangeListener>();
  let sub: Subscription | undefined;
  let pending: { sessions: Set<string>; approvals: boolean } | undefined;
  let timer: NodeJS.Timeout | undefined;

  const flush = () => {
    timer = undefined;
    const batch = pending;
    pending = undefined;
    if (!batch) return;
    const out: ChangeBatch = { sessions: [...batch.sessions], approvals: batch.approvals };
    for (const listener of listeners) {
      try {
        listener(out);
      } catch (err) {
        opts.logger.warn({ err }, "change feed listener failed");
      }
    }
  };
  const note = (subject: string, data: Uint8Array) => {
    const change = changeOf(subject, data);
    if (!change) return;
    pending ??= { sessions: new Set(), approvals: false };
    pending.sessions.add(change.sessionId);
    pending.approvals ||= change.approvals;
    timer ??= setTimeout(flush, opts.windowMs);
  };

  return {
    join(listener) {
      listeners.add(listener);
      sub ??= nc.subscribe(subjects.eventsAll, {
        callback: (err, msg) => {
          if (!err) note(msg.subject, msg.data);
        },
      });
      return () => {
        listeners.delete(listener);
        if (listeners.size > 0 || !sub) return;
        sub.unsubscribe();
        sub = undefined;
        clearTimeout(timer);
        timer = undefined;
        pending = undefined;
      };
    },
    get listeners() {
      return listeners.size;
    },
  };
}
