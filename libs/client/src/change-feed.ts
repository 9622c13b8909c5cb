// The tenant's change feed (PROTOCOL changes 49, 74 and 75): which sessions changed in the store's
// indexes and whether pending approvals may have, coalesced, for views that reload from those
// indexes when something changed instead of on a timer. It follows the store's notices that a batch
// is in the indexes (not the events as they are appended, which can come before the store applied
// them) and the lifecycle records. Live only: it subscribes while someone listens, and costs in
// proportion to the store's batches, never the log's history. The gateway's `GET /v1/changes` and
// the SDK's `FleetClient.changes()` are this feed.
import { parseLifecycleSubject, parseStoreAppliedSubject, StoreAppliedNotice, subjects } from "@fleet/protocol";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";

/** Most sessions one frame names; a window that changed more is sent as `all` (PROTOCOL change 75). */
export const MAX_FRAME_SESSIONS = 1_000;

/** What changed in one window: the sessions whose log grew (or were deleted, archived, restored). */
export interface ChangeBatch {
  sessions: string[];
  /** An approval may have been asked for, answered or dropped (its run or session ended). */
  approvals: boolean;
  /**
   * Anything may have changed (`sessions` is then empty and `approvals` true): a store took a group
   * up or switched namespaces, the connection was down (notices are core NATS: any sent meanwhile
   * were missed), or the window changed more than `MAX_FRAME_SESSIONS` sessions.
   */
  all: boolean;
}

export type ChangeListener = (batch: ChangeBatch) => void;

export interface ChangeFeed {
  /**
   * Adds a listener; the returned function removes it. The first one subscribes, the last one's
   * leave unsubscribes. `ends.error` hears a subscription the server refused (the login may not
   * subscribe to the store's notices: no frame comes for what it would have carried);
   * `ends.closed` hears the connection close (no frame comes any more).
   */
  join(listener: ChangeListener, ends?: FeedEnds): () => void;
  /** Notices may have been lost: the next frame says `all`. The feed calls it itself when its connection comes back. */
  missed(): void;
  readonly listeners: number;
}

/** What ends a listener's frames, besides leaving. */
export interface FeedEnds {
  error?: (err: Error) => void;
  closed?: () => void;
}

/** Where a notice that does not parse is reported (a pino logger fits). */
export interface ChangeFeedLogger {
  warn(fields: Record<string, unknown>, message: string): void;
}

const decoder = new TextDecoder();

/**
 * The change one message makes (pure): a store notice's sessions and approvals flag, or a lifecycle
 * record's session (approvals may differ: its session was deleted, archived or restored). `null`
 * for any other subject, and an error for a notice that does not parse.
 */
export function changeOf(subject: string, data: Uint8Array): ChangeBatch | { error: string } | null {
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

/** Changes gathered until they are sent: a set of sessions, or `all` once past the cap. */
export interface PendingChanges {
  sessions: Set<string>;
  approvals: boolean;
  all: boolean;
}

/** Adds one change to what is pending (in place); past `MAX_FRAME_SESSIONS` sessions it becomes `all` and keeps no names. */
export function addChange(pending: PendingChanges, change: ChangeBatch): void {
  pending.all ||= change.all;
  pending.approvals ||= change.approvals;
  if (pending.all) return;
  for (const sessionId of change.sessions) pending.sessions.add(sessionId);
  if (pending.sessions.size > MAX_FRAME_SESSIONS) pending.all = true;
}

/** The frame of what is pending (pure). */
export function batchOf(pending: PendingChanges): ChangeBatch {
  return pending.all
    ? { sessions: [], approvals: true, all: true }
    : { sessions: [...pending.sessions], approvals: pending.approvals, all: false };
}

export const noChanges = (): PendingChanges => ({ sessions: new Set(), approvals: false, all: false });

/**
 * `windowMs`: changes are sent at most once per window, the first `windowMs` after it opens. The
 * feed watches `nc`'s status: when the connection comes back it calls `missed()`.
 */
export function createChangeFeed(
  nc: NatsConnection,
  opts: { windowMs: number; logger?: ChangeFeedLogger },
): ChangeFeed {
  const listeners = new Set<ChangeListener>();
  const ended = new Set<FeedEnds>();
  let subs: Subscription[] | undefined;
  let pending: PendingChanges | undefined;
  let timer: NodeJS.Timeout | undefined;

  const flush = () => {
    timer = undefined;
    const gathered = pending;
    pending = undefined;
    if (!gathered) return;
    const out = batchOf(gathered);
    for (const listener of listeners) {
      try {
        listener(out);
      } catch (err) {
        opts.logger?.warn({ err }, "change feed listener failed");
      }
    }
  };
  const add = (change: ChangeBatch) => {
    pending ??= noChanges();
    addChange(pending, change);
    timer ??= setTimeout(flush, opts.windowMs);
  };
  const note = (subject: string, data: Uint8Array) => {
    const change = changeOf(subject, data);
    if (!change) return;
    if ("error" in change) {
      opts.logger?.warn({ evt: "change_notice_invalid", subject, error: change.error }, "ignored a store notice");
      return;
    }
    add(change);
  };
  const unsubscribe = () => {
    if (subs && !nc.isClosed()) for (const sub of subs) sub.unsubscribe();
    subs = undefined;
    clearTimeout(timer);
    timer = undefined;
    pending = undefined;
  };
  const subscribe = (subject: string) =>
    nc.subscribe(subject, {
      callback: (err, msg) => {
        if (!err) return note(msg.subject, msg.data);
        // A refused subscription hears nothing more: the next join subscribes (and is told) again.
        unsubscribe();
        for (const ends of ended) ends.error?.(err);
      },
    });
  const missed = () => {
    if (subs) add({ sessions: [], approvals: true, all: true });
  };
  void (async () => {
    // The store's notices are core NATS: those sent while the connection was down are gone.
    for await (const s of nc.status()) if (s.type === "reconnect") missed();
  })().catch(() => undefined);
  const close = () => {
    for (const ends of ended) ends.closed?.();
  };
  void nc.closed().then(close, close);

  return {
    join(listener, ends) {
      listeners.add(listener);
      if (ends) ended.add(ends);
      subs ??= [subscribe(subjects.storeAppliedAll), subscribe(subjects.lifecycleAll)];
      let left = false;
      return () => {
        if (left) return;
        left = true;
        listeners.delete(listener);
        if (ends) ended.delete(ends);
        if (listeners.size === 0) unsubscribe();
      };
    },
    missed,
    get listeners() {
      return listeners.size;
    },
  };
}

/**
 * The feed's frames as an async iterable, from when iteration starts. A reader that falls behind
 * gets what it missed merged into one frame (`addChange`: at most one frame waits, and past the
 * cap it says `all`), so a slow reader costs no memory that grows. Ends when `signal` aborts, the
 * caller stops, or the connection closes; throws `refused(err)` when the server refuses the feed's
 * subscription.
 */
export async function* iterateChanges(
  feed: ChangeFeed,
  nc: NatsConnection,
  refused: (err: Error) => Error,
  signal?: AbortSignal,
): AsyncGenerator<ChangeBatch> {
  if (signal?.aborted || nc.isClosed()) return;
  let waiting: PendingChanges | undefined;
  let wake: (() => void) | undefined;
  let ended = false;
  let failure: Error | undefined;
  const end = () => {
    ended = true;
    wake?.();
  };
  const leave = feed.join(
    (batch) => {
      waiting ??= noChanges();
      addChange(waiting, batch);
      wake?.();
    },
    {
      error: (err) => {
        failure ??= refused(err);
        end();
      },
      closed: end,
    },
  );
  signal?.addEventListener("abort", end, { once: true });
  try {
    while (!ended) {
      if (!waiting) {
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
        continue;
      }
      const next = batchOf(waiting);
      waiting = undefined;
      yield next;
    }
    if (failure) throw failure;
  } finally {
    signal?.removeEventListener("abort", end);
    leave();
  }
}
