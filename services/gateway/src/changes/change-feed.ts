// The tenant's change feed (PROTOCOL changes 49 and 74): which sessions changed in the store's
// indexes and whether pending approvals may have, coalesced, for views that reload from those indexes
// when something changed instead of on a timer. It follows the store's notices that a batch is in
// the indexes (not the events as they are appended, which can come before the store applied them)
// and the lifecycle records. Live only: it subscribes while someone listens, and costs in proportion
// to the store's batches, never the log's history.
import { parseLifecycleSubject, parseStoreAppliedSubject, StoreAppliedNotice, subjects } from "@fleet/protocol";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Logger } from "pino";

/** Most sessions one frame names; a window that changed more is sent as `all` (PROTOCOL change 75). */
export const MAX_FRAME_SESSIONS = 1_000;

/** What changed in one window: the sessions whose log grew (or were deleted, archived, restored). */
export interface ChangeBatch {
  sessions: string[];
  /** An approval may have been asked for, answered or dropped (its run or session ended). */
  approvals: boolean;
  /**
   * Anything may have changed (`sessions` is then empty and `approvals` true): a store took a group
   * up or switched namespaces, this gateway's connection was down (notices are core NATS: it missed any sent
   * meanwhile), or the window changed more than `MAX_FRAME_SESSIONS` sessions.
   */
  all: boolean;
}

export type ChangeListener = (batch: ChangeBatch) => void;

export interface ChangeFeed {
  /** Adds a listener; the returned function removes it. The first one subscribes, the last one's leave unsubscribes. */
  join(listener: ChangeListener): () => void;
  /** Notices may have been lost (the connection came back): the next frame says `all`. */
  missed(): void;
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
): { sessions: string[]; approvals: boolean; all: boolean } | { error: string } | null {
  const lifecycle = parseLifecycleSubject(subject);
  if (lifecycle) return { sessions: [lifecycle], approvals: true, all: false };
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
  return { sessions: notice.data.sessions, approvals: notice.data.approvals, all: notice.data.all === true };
}

/** `windowMs`: changes are sent at most once per window, the first `windowMs` after it opens. */
export function createChangeFeed(nc: NatsConnection, opts: { windowMs: number; logger: Logger }): ChangeFeed {
  const listeners = new Set<ChangeListener>();
  let subs: Subscription[] | undefined;
  let pending: { sessions: Set<string>; approvals: boolean; all: boolean } | undefined;
  let timer: NodeJS.Timeout | undefined;

  const flush = () => {
    timer = undefined;
    const batch = pending;
    pending = undefined;
    if (!batch) return;
    const all = batch.all || batch.sessions.size > MAX_FRAME_SESSIONS;
    const out: ChangeBatch = all
      ? { sessions: [], approvals: true, all }
      : { sessions: [...batch.sessions], approvals: batch.approvals, all };
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
    add(change);
  };
  const add = (change: { sessions: string[]; approvals: boolean; all: boolean }) => {
    pending ??= { sessions: new Set(), approvals: false, all: false };
    pending.all ||= change.all;
    // Past the cap the frame says `all`: the names are not kept.
    if (!pending.all && pending.sessions.size <= MAX_FRAME_SESSIONS) {
      for (const sessionId of change.sessions) pending.sessions.add(sessionId);
    }
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
    missed() {
      if (subs) add({ sessions: [], approvals: true, all: true });
    },
    get listeners() {
      return listeners.size;
    },
  };
}
