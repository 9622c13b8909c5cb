// One session's entry in its partition's open-work index, kept by the session's writer.
import type { FleetEvent } from "@fleet/protocol";
import type { Logger } from "@fleet/runtime";
import {
  beforeAppend,
  type IndexOp,
  type IndexStatus,
  type OpenWorkKind,
  statusAfter,
  whenSettled,
} from "./open-work.js";
import type { OpenWorkIndex } from "./open-work-index.js";

export interface SessionIndexEntry {
  /**
   * Appends one event through `append`: when the event may open work and the entry is not known
   * to be listed, the entry is written first (and `append` is not called if it could not be);
   * once no append is in flight any more, the entry is removed when `open()` is empty.
   */
  around<T>(event: FleetEvent, append: () => Promise<T>): Promise<T>;
  /** Runs `work` (several appends) with the removal decided only once it is done, not between them. */
  hold<T>(work: () => Promise<T>): Promise<T>;
  /**
   * Work may have closed outside an append (a restore's last steps, a takeover's check): removes the
   * entry when nothing is open (after `lingerMs`).
   */
  settle(): void;
  /** Removes the entry whatever the log shows (the session's log was deleted); resolves once done. */
  forget(): Promise<void>;
}

/**
 * Operations are carried out one after the other in the order they were decided (a removal decided
 * before a write never lands after it). Writes go through the partition's write fence like appends
 * (a deposed holder never removes its successor's entries); a failed removal only leaves an extra
 * entry.
 */
/**
 * The entry could not be written because the partition's lease is no longer held: nothing of the
 * decision was appended, so its command must stay for the partition's next holder (not be acked).
 */
export class OpenWorkUnwritableError extends Error {
  constructor() {
    super("open-work entry not written: the partition lease is no longer held");
    this.name = "OpenWorkUnwritableError";
  }
}

export function createSessionIndexEntry(opts: {
  index: OpenWorkIndex;
  partition: number;
  sessionId: string;
  open: () => OpenWorkKind[];
  writeGate?: () => boolean | Promise<boolean>;
  /** Aborted when the writer lets the session go: a write still being retried gives up. */
  signal: AbortSignal;
  logger: Logger;
  /**
   * How long the session must stay settled with nothing open before its entry is removed (default
   * 0: at once). A session that opens work again within it keeps its entry: no removal, and no
   * write before its next opening event. Meanwhile the entry is one without open work (harmless).
   */
  lingerMs?: number;
}): SessionIndexEntry {
  let status: IndexStatus = "unknown";
  let inFlight = 0;
  let chain: Promise<unknown> = Promise.resolve();
  const lingerMs = opts.lingerMs ?? 0;
  /** The removal waiting out `lingerMs`; cleared by the next append. */
  let lingering: NodeJS.Timeout | undefined;
  const stopLingering = () => {
    if (lingering) clearTimeout(lingering);
    lingering = undefined;
  };
  opts.signal.addEventListener("abort", stopLingering, { once: true });
  /** The write in progress: an append decided after it waits for it (its event may open work too). */
  let marking: Promise<void> | undefined;
  const gateOpen = async () => {
    if (opts.signal.aborted) return false;
    const gate = opts.writeGate?.() ?? true;
    return gate === true || (await gate);
  };

  async function carryOut(op: IndexOp) {
    if (op === "mark") {
      if (!(await gateOpen())) throw new OpenWorkUnwritableError();
      await opts.index.mark(opts.partition, opts.sessionId, () => gateOpen());
      return;
    }
    if (!(await gateOpen())) return;
    try {
      await opts.index.unmark(opts.partition, opts.sessionId);
    } catch (err) {
      opts.logger.debug({ evt: "open_work_unmark_failed", err }, "open-work entry left in the index");
    }
  }

  function enqueue(op: IndexOp): Promise<void> {
    status = statusAfter(op);
    const run = chain.then(() => carryOut(op));
    chain = run.catch(() => undefined);
    const done = run.then(
      () => {
        if (marking === done) marking = undefined;
      },
      (err) => {
        if (marking === done) marking = undefined;
        if (status === "listed") status = "unknown";
        throw err;
      },
    );
    if (op === "mark") marking = done;
    return done;
  }

  function settleNow() {
    if (inFlight > 0) return;
    const op = whenSettled(status, opts.open());
    if (op) void enqueue(op).catch(() => undefined);
  }

  function settle() {
    if (lingerMs <= 0) return settleNow();
    if (inFlight > 0 || lingering || opts.signal.aborted || !whenSettled(status, opts.open())) return;
    lingering = setTimeout(() => {
      lingering = undefined;
      settleNow();
    }, lingerMs);
    lingering.unref();
  }

  return {
    async around(event, append) {
      stopLingering();
      inFlight++;
      try {
        if (marking) await marking.catch(() => undefined);
        const op = beforeAppend(status, event);
        if (op) await enqueue(op);
        return await append();
      } finally {
        inFlight--;
        settle();
      }
    },
    async hold(work) {
      stopLingering();
      inFlight++;
      try {
        return await work();
      } finally {
        inFlight--;
        settle();
      }
    },
    settle,
    forget: () => {
      stopLingering();
      return enqueue("unmark");
    },
  };
}
