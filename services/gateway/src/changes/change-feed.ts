// The tenant's change feed (PROTOCOL changes 49 and 74): which sessions changed in the store's
// indexes and whether pending approvals may have, coalesced, for views that reload from those indexes
// when something changed instead of on a timer. It follows the store's notices that a batch is in
// the indexes (not the events as they are appended, which can come before the store applied them)
// and the lifecycle records. Live only: it subscribes while someone listens, and costs in proportion
// to the store's batches, never the log's history.
import { parseLifecycleSubject, parseStoreAppliedSubject, StoreAppliedNotice, subjects } from "@fleet/protocol";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Logger } from "pino";

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

const decoder = new TextDecoder();

/**
 * The change one message makes (pure): a store notice's sessions and approvals flag, or a lifecycle
 * record's session (approvals may differ: its session was deleted, archived or restored). `null`
 * for any other subject, and an error for a notice that does not parse.
 */
export function changeOf(
  subject: string,
  data: Uint8Array,
): { sessions: string[]; approvals: boolean } | { error: string } | null {
  const lifecycle = parseLifecycleSubject(subject);
  if (lifecycle) return { sessions: [lifecycle], approvals: true };
  const group = parseStoreAppliedSubject(subject);
  if (group === null) return null;
  let json: unknown;
  try {
    json = JSON.parse(decoder.decode(data));
  } catch {
    return { error: "not JSON" };
  }
  const notice = StoreAppliedNotice.safeParse(json);
  if (!notice.success) return { error: notice.error.issues[0]?.message ?? "invalid notice" };
  if (notice.data.group !== group) return { error: `group ${notice.data.group} is not its subject's ${group}` };
  return { sessions: notice.data.sessions, approvals: notice.data.approvals };
}

/** `windowMs`: changes are sent at most once per window, the first `windowMs` after it opens. */
export function createChangeFeed(nc: NatsConnection, opts: { windowMs: number; logger: Logger }): ChangeFeed {
  const listeners = new Set<ChangeListener>();
  let subs: Subscription[] | undefined;
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
    if ("error" in change) {
      opts.logger.warn({ evt: "gateway_notice_invalid", subject, error: change.error }, "ignored a store notice");
      return;
    }
    pending ??= { sessions: new Set(), approvals: false };
    for (const sessionId of change.sessions) pending.sessions.add(sessionId);
    pending.approvals ||= change.approvals;
    timer ??= setTimeout(flush, opts.windowMs);
  };
  const subscribe = (subject: string) =>
    nc.subscribe(subject, {
      callback: (err, msg) => {
        if (!err) note(msg.subject, msg.data);
      },
    });

  return {
    join(listener) {
      listeners.add(listener);
      subs ??= [subscribe(subjects.storeAppliedAll), subscribe(subjects.lifecycleAll)];
      return () => {
        listeners.delete(listener);
        if (listeners.size > 0 || !subs) return;
        for (const sub of subs) sub.unsubscribe();
        subs = undefined;
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
