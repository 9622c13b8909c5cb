// One session on its owning worker: the thin shell around the session's pure core. The shell's
// state and write path are `session/session-shell.ts`; commands go through `session/command-intake.ts`,
// decisions' effects through `session/effects.ts` (runs, approvals, compaction, lifecycle). README.md
// draws the data flow of one prompt.
import { foldTraceCursor, runCursorOf, workerApprovalLayer } from "@fleet/protocol";
import { childrenToClose } from "./decide/decide-child.js";
import { unstartedRun } from "./decide/unstarted-run.js";
import { resumePointFromCursor } from "./engine/index.js";
import { createSessionAppender } from "./event-appender.js";
import { restoreOpen } from "./lifecycle/lifecycle-marks.js";
import { openWorkOf } from "./open-work/open-work.js";
import { createSessionIndexEntry } from "./open-work/session-index-entry.js";
import type { CommandDelivery } from "./partition-intake.js";
import { createReplayDriver } from "./replay-driver.js";
import { type ActorDeps, OPEN_WORK_LINGER_MS } from "./session/actor-deps.js";
import { decideOwn, handleCommand } from "./session/command-intake.js";
import { startCompaction } from "./session/compaction-runner.js";
import { runEffect } from "./session/effects.js";
import { createShellEngine } from "./session/engine-wiring.js";
import { resumeLifecycle } from "./session/lifecycle-runner.js";
import { startRun } from "./session/run-driver.js";
import {
  announceOwner,
  appendDraft,
  detachShell,
  isBusy,
  noteAppended,
  noteRefused,
  type SessionShell,
} from "./session/session-shell.js";
import { createSessionBudget } from "./session-budget.js";
import { type LoadedSession, loadSession } from "./snapshots/session-load.js";
import { createSnapshotWriter } from "./snapshots/snapshot-writer.js";
import { createUpdateCoalescer } from "./update-coalescer.js";

export type { ActorDeps, ActorSettings } from "./session/actor-deps.js";

/**
 * One session on its owning worker, as a thin shell around the session decider: it loads and folds
 * the session's log (`SessionState`, the protocol's one fold), decides each command
 * (`decideCommand`), appends the decided events through the fenced single-writer appender, folding
 * each once it is durable, and runs the decided effects (a run in the engine, which reads the same
 * fold; a compaction; an abort). It keeps nothing the log does not hold, except what is in flight
 * (the engine's run, a compaction's LLM call, the gates waiting on the log).
 * Contract: `handle` never throws for bad input; every command ends in exactly one
 * `command_accepted` or `command_rejected`, appended before any event the command causes; the
 * command message is acked once its acceptance is durable (for a run-starting command, once the
 * run's first message is).
 */
export class SessionActor {
  readonly sessionId: string;
  private readonly shell: SessionShell;

  private constructor(deps: ActorDeps, loaded: LoadedSession) {
    this.sessionId = deps.sessionId;
    this.shell = createShell(deps, loaded);
  }

  /** Loads the session's fold: its snapshot and the events after it, or its whole log. */
  static async load(deps: ActorDeps): Promise<SessionActor> {
    const loaded = await loadSession({
      js: deps.js,
      jsm: deps.jsm,
      sessionId: deps.sessionId,
      partition: deps.partition,
      groups: deps.groups,
      snapshots: deps.snapshots,
      logger: deps.logger,
    });
    return new SessionActor(deps, loaded);
  }

  get lastUsed(): number {
    return this.shell.lastUsed;
  }

  set lastUsed(at: number) {
    this.shell.lastUsed = at;
  }

  get isDead(): boolean {
    return this.shell.dead;
  }

  /** A deletion, archive or restore is in flight (its command waits for it; the next owner resumes it). */
  get inLifecycle(): boolean {
    return this.shell.lifecycleTask !== undefined;
  }

  /** A run, a compaction or a lifecycle operation is in flight on this actor. */
  get isRunning(): boolean {
    return isBusy(this.shell);
  }

  /**
   * Finishes what the log shows as begun and not done (after a takeover, a crash or a restart), at
   * the point where pi would: an open run carries on from its cursor (aborted, if an abort was
   * accepted), an open compaction is redone or closed, and writes still pending are flushed.
   * Approvals need nothing: the resumed run's gates read their requests and decisions from the log,
   * and arm the expiry timer of a waiting request from its logged `expiresAt`.
   */
  async recover(reason = `worker ${this.shell.deps.workerId} took over`): Promise<void> {
    const shell = this.shell;
    const { state, log, deps, engine } = shell;
    if (shell.dead || isBusy(shell)) return;
    // A deletion or restore the log shows as begun goes on in the background; commands wait for it.
    if (state.deleting || restoreOpen(shell.marks)) {
      deps.lifecycle?.metrics.lifecycleResumed.inc({ op: state.deleting?.op ?? "restore" });
      void resumeLifecycle(shell).catch((err) => log.warn({ err }, "lifecycle resume failed"));
      return;
    }
    if (!state.tree.config) return;
    const open = state.compaction;
    if (open && !open.runId) {
      log.info({ evt: "compaction_resume", compactionId: open.id }, "finishing an interrupted compaction");
      await announceOwner(shell);
      startCompaction(shell, open.id);
      return;
    }
    const cursor = runCursorOf(state);
    const point = resumePointFromCursor(cursor, reason);
    if (point) {
      log.info({ evt: "run_resume", runId: point.runId, at: point.at }, "resuming interrupted run");
      await announceOwner(shell);
      const closing = deps.subAgents ? childrenToClose(cursor) : [];
      if (closing.length > 0) await deps.subAgents?.closeChildren(this.sessionId, closing);
      // Not awaited past the start: a resumed run may wait at an approval gate for a command.
      void startRun(shell, () => engine.resume(point));
      return;
    }
    // Accepted, never started (the command itself may be gone: a cluster was seen losing one).
    const unstarted = unstartedRun(state);
    if (unstarted) {
      log.info({ evt: "run_start_recovered", kind: unstarted.kind }, "starting an accepted run that never began");
      await announceOwner(shell);
      void runEffect(shell, unstarted).catch((err) => log.warn({ err }, "recovered run failed to start"));
      return;
    }
    if (state.pendingWrites.length > 0) {
      await announceOwner(shell);
      await engine.flushWrites().catch(() => undefined);
    }
    await shell.replay.continue();
  }

  /**
   * Before an idle session is let go: stores its fold at the log's last event when it is long and
   * that event is not in its snapshot yet, so that its next load reads no event. Never rejects.
   */
  async snapshotBeforeLeaving(): Promise<void> {
    const shell = this.shell;
    if (shell.dead || shell.detached || isBusy(shell)) return;
    await shell.snapshotWriter?.flush(shell.state, shell.marks, shell.appender.lastSeq, shell.lastMsgId);
  }

  /** After a takeover loaded this session from the index: its entry goes when nothing is open. */
  settleIndex(): void {
    this.shell.indexEntry?.settle();
  }

  /** Resolves once no run or compaction is in flight (or after `ms`). */
  async waitForIdle(ms: number): Promise<boolean> {
    const shell = this.shell;
    if (!isBusy(shell)) return true;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    });
    const idle = Promise.all([shell.engine.waitForIdle(), shell.compaction?.done, shell.lifecycleTask]).then(
      () => true,
    );
    const result = await Promise.race([idle, timeout]);
    clearTimeout(timer);
    return result;
  }

  /**
   * Stops this actor without writing anything more. What is in flight is left as the log shows it:
   * tool calls are not cancelled (a call belongs to the session; the next owner waits for its
   * result), and the next owner resumes the run or the compaction from the log.
   */
  detach(): void {
    detachShell(this.shell);
  }

  /** Handles one delivered command (see the class contract). */
  async handle(delivery: CommandDelivery): Promise<void> {
    const shell = this.shell;
    shell.lastUsed = shell.deps.now();
    // A deletion or restore in progress finishes first: the command is decided on what it leaves.
    if (shell.lifecycleTask) await shell.lifecycleTask;
    if (shell.dead) {
      delivery.msg.nak(500);
      return;
    }
    await handleCommand(shell, delivery);
  }
}

/** Until the shell's engine and replay driver are made (right after the shell itself). */
const UNSET = undefined as never;

/** The shell of a loaded session: its appender, snapshots, budget, coalescer, engine and index entry. */
function createShell(deps: ActorDeps, loaded: LoadedSession): SessionShell {
  const { lastSeq, marks, state } = loaded;
  const log = deps.logger.child({ sessionId: deps.sessionId, partition: deps.partition });
  // The callbacks below run only after the shell is made.
  let shell: SessionShell;
  const appender = createSessionAppender({
    publisher: deps.publisher,
    sessionId: deps.sessionId,
    partition: deps.partition,
    groups: deps.groups ?? 1,
    lastSeq,
    now: deps.now,
    validate: deps.settings.validateAppends ?? true,
    ...(deps.writeGate ? { writeGate: deps.writeGate } : {}),
    onAppended: (event, _seq, ms) => {
      deps.metrics.eventsAppended.inc({ type: event.type });
      deps.metrics.appendLatency.observe(ms / 1000);
      noteAppended(shell);
      shell.traceCursor = foldTraceCursor(shell.traceCursor, event);
      deps.traces?.appended(event);
    },
    onRefused: (event, failure) => noteRefused(shell, event, failure),
  });
  const snapshotWriter = deps.snapshots
    ? createSnapshotWriter({
        sessionId: deps.sessionId,
        settings: deps.snapshots,
        snapshotEvents: loaded.snapshotEvents,
        logger: deps.logger,
      })
    : undefined;
  // A long log loaded without a snapshot gets one now.
  if (lastSeq > 0) snapshotWriter?.folded(state, marks, lastSeq, loaded.lastMsgId);
  deps.traces?.loaded(deps.sessionId, loaded.events);
  const budget = createSessionBudget({
    sessionId: deps.sessionId,
    partition: deps.partition,
    state,
    tenant: deps.tenantBudget,
    now: deps.now,
    metrics: deps.metrics,
    log,
    countable: () => !state.deleting && !restoreOpen(marks),
  });
  budget.recordToday();
  const coalescer = createUpdateCoalescer({
    windowMs: deps.settings.coalesceMs,
    maxDeltas: deps.settings.coalesceDeltas,
    flush: (deltas) =>
      appendDraft(shell, { id: deps.newId(), body: { type: "message_update", deltas } }, shell.coalescedRunId),
    // A failed flush already killed the actor (appendDraft); message_end still carries the full message.
    onError: () => undefined,
  });
  const detachedSignal = new AbortController();
  shell = {
    sessionId: deps.sessionId,
    deps,
    log,
    state,
    marks,
    appender,
    coalescer,
    engine: UNSET,
    budget,
    snapshotWriter,
    indexEntry: deps.openWork
      ? createSessionIndexEntry({
          index: deps.openWork,
          partition: deps.partition,
          sessionId: deps.sessionId,
          open: () => openWorkOf(state, restoreOpen(marks) && !shell.restoreDone),
          ...(deps.writeGate ? { writeGate: deps.writeGate } : {}),
          signal: detachedSignal.signal,
          logger: log,
          lingerMs: deps.settings.openWorkLingerMs ?? OPEN_WORK_LINGER_MS,
        })
      : undefined,
    workerApprovals: workerApprovalLayer(deps.settings.approvalTools),
    approvalWaiters: new Map(),
    freshToolCalls: new Set(),
    messageEndWaiters: [],
    detachedSignal,
    replay: UNSET,
    compaction: undefined,
    lifecycleTask: undefined,
    coalescedRunId: undefined,
    traceCursor: loaded.traceCursor,
    dead: false,
    detached: false,
    refusedSince: undefined,
    refusedAttempts: 0,
    restoring: false,
    removed: false,
    lastMsgId: loaded.lastMsgId,
    restoreDone: false,
    lastUsed: deps.now(),
  };
  shell.engine = createShellEngine(shell);
  shell.replay = createReplayDriver({
    state,
    sessionId: deps.sessionId,
    busy: () => shell.dead || shell.detached || isBusy(shell),
    submit: (command) => decideOwn(shell, command),
    log,
  });
  return shell;
}
