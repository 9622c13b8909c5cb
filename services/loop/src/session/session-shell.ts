// The per-session shell's state, one object literal shared by the shell's modules (command intake,
// run driver, approvals, compaction, lifecycle), and its write path: every event of the session is
// stamped, appended through the fenced single-writer appender and folded here, once it is durable.
import {
  type ApprovalLayer,
  type FleetEvent,
  foldSessionEvents,
  type SessionState,
  type TraceCursor,
} from "@fleet/protocol";
import { type Logger, type PublishFailure, publishFailureCause } from "@fleet/runtime";
import type { GateStep } from "../decide/approval-gate.js";
import type { Decision } from "../decide/decision.js";
import { stampDraft } from "../decide/stamp-draft.js";
import type { SessionEngine } from "../engine/index.js";
import type { SessionAppender } from "../event-appender.js";
import { type LifecycleMarks, markLifecycle } from "../lifecycle/lifecycle-marks.js";
import type { SessionIndexEntry } from "../open-work/session-index-entry.js";
import type { SessionBudget } from "../session-budget.js";
import type { DraftEvent } from "../session-core/drafts.js";
import type { SnapshotWriter } from "../snapshots/snapshot-writer.js";
import type { UpdateCoalescer } from "../update-coalescer.js";
import type { ActorDeps } from "./actor-deps.js";

/**
 * One session's shell. It keeps nothing the log does not hold, except what is in flight (the
 * engine's run, a compaction's LLM call, the gates waiting on the log). `state` is the session's
 * one fold: every appended event, folded once it is durable.
 */
export interface SessionShell {
  readonly sessionId: string;
  readonly deps: ActorDeps;
  readonly log: Logger;
  readonly state: SessionState;
  /** Where the log's deletion and restore stand, by stream sequence. */
  readonly marks: LifecycleMarks;
  readonly appender: SessionAppender;
  readonly coalescer: UpdateCoalescer;
  /** Set right after the shell is made (the engine's ports close over the shell). */
  engine: SessionEngine;
  readonly budget: SessionBudget;
  /** Stores the fold every `snapshots.every` events (absent without snapshots). */
  readonly snapshotWriter: SnapshotWriter | undefined;
  /** This session's entry in the open-work index. */
  readonly indexEntry: SessionIndexEntry | undefined;
  /** The worker default (`FLEET_APPROVAL_TOOLS`) as the last layer of approval rules. */
  readonly workerApprovals: ApprovalLayer;
  /** Approval gates waiting for a decision in the log, by tool call id. */
  readonly approvalWaiters: Map<string, (step: GateStep) => void>;
  /** Tool calls of assistant messages this shell appended itself: nobody can have dispatched them yet. */
  readonly freshToolCalls: Set<string>;
  /** Resolved by the next durable `message_end` (a run's start waits for its first message). */
  readonly messageEndWaiters: Array<() => void>;
  readonly detachedSignal: AbortController;
  /** Starts a replay session's turns (change 51); set right after the shell is made. */
  replay: { continue: () => Promise<void> };
  /** The standalone compaction this shell is running (its LLM call). */
  compaction: { abort: AbortController; done: Promise<void> } | undefined;
  /** The deletion, archive or restore in progress (commands wait for it). */
  lifecycleTask: Promise<void> | undefined;
  coalescedRunId: string | undefined;
  /** Where the open run sits in its trace (change 46): the context sent to the LLM and the tool runners. */
  traceCursor: TraceCursor;
  dead: boolean;
  detached: boolean;
  /** Since when this session's appends are refused for a passing cause (one log line per outage). */
  refusedSince: number | undefined;
  refusedAttempts: number;
  /** Appending archived events: they are history, not new spend. */
  restoring: boolean;
  /** The session was deleted by this shell: its command may be acked though the actor is gone. */
  removed: boolean;
  /** `Nats-Msg-Id` of the log's last message (the appender knows its sequence). */
  lastMsgId: string;
  /** The restore the log shows was carried out to its end by this shell (its last steps are not logged). */
  restoreDone: boolean;
  lastUsed: number;
}

/** A run, a compaction or a lifecycle operation is in flight. */
export const isBusy = (shell: SessionShell): boolean =>
  shell.engine.state.isStreaming || shell.compaction !== undefined || shell.lifecycleTask !== undefined;

/**
 * Stops the shell without writing anything more. What is in flight is left as the log shows it:
 * tool calls are not cancelled (a call belongs to the session; the next owner waits for its
 * result), and the next owner resumes the run or the compaction from the log.
 */
export function detachShell(shell: SessionShell): void {
  if (shell.detached) return;
  shell.detached = true;
  shell.detachedSignal.abort();
  shell.snapshotWriter?.stop();
  shell.coalescer.dispose();
  shell.engine.abort();
  shell.compaction?.abort.abort();
}

/** The writer was fenced or a write failed: the worker must drop this session's actor. */
export function killShell(shell: SessionShell, why: string): void {
  if (shell.dead) return;
  shell.dead = true;
  detachShell(shell);
  shell.deps.onDead(shell.sessionId, why);
}

export function stamp(shell: SessionShell, draft: DraftEvent, runId?: string): FleetEvent {
  return stampDraft(shell.state, draft, {
    sessionId: shell.sessionId,
    producer: shell.deps.workerId,
    now: shell.deps.now(),
    runId,
  });
}

export function appendDraft(shell: SessionShell, draft: DraftEvent, runId?: string): Promise<void> {
  return appendEvent(shell, stamp(shell, draft, runId));
}

/** Appends `owner_change` unless this worker's epoch already owns the session in the log. */
/** Appends `owner_change` unless the fold's owner is this worker at its epoch; whether it did. */
export async function announceOwner(shell: SessionShell): Promise<boolean> {
  const owner = shell.state.owner;
  const { workerId, partition, epoch } = shell.deps;
  if (owner?.workerId === workerId && owner.epoch === epoch) return false;
  await appendDraft(shell, { id: shell.deps.newId(), body: { type: "owner_change", workerId, partition, epoch } });
  return true;
}

/**
 * `decide` on the fold, as this worker's: a decision that writes while this worker has not announced
 * itself (`owner_change`) yet is made again once the announcement is folded, so that what it
 * records of the log counts every event before its own (a tombstone's `events` are those its
 * archive holds: the log before the deletion's `command_accepted`, the announcement included).
 */
export async function decideAsOwner(shell: SessionShell, decide: () => Decision): Promise<Decision> {
  const decision = decide();
  if (decision.kind !== "decided" || decision.events.length === 0) return decision;
  return (await announceOwner(shell)) ? decide() : decision;
}

/**
 * Appends one event and folds it into the session's state. A refusal for a passing cause (a full
 * store, an election) is retried by the appender while the lease is held: the call waits, and the
 * session keeps its work. Throws when the append failed; a fenced writer (the lease lost) kills the
 * shell, and the partition's next holder resumes the session from the log. Every append goes
 * through here, and the first one of this owner is its `owner_change`.
 */
export async function appendEvent(shell: SessionShell, event: FleetEvent, restoredMsgId?: string): Promise<void> {
  if (shell.detached) throw new Error("actor detached");
  // The open-work entry is durable before an event that may open work is (change 41).
  if (shell.indexEntry) return shell.indexEntry.around(event, () => appendIndexed(shell, event, restoredMsgId));
  return appendIndexed(shell, event, restoredMsgId);
}

async function appendIndexed(shell: SessionShell, event: FleetEvent, restoredMsgId?: string): Promise<void> {
  // A restored event is history: no ownership change goes between two of them.
  if (event.type !== "owner_change" && restoredMsgId === undefined) await announceOwner(shell);
  const out = await shell.appender.append(event, restoredMsgId);
  if (!out.ok) {
    if (out.kind === "fenced") {
      shell.deps.metrics.fencedSessions.inc();
      shell.log.warn({ evt: "fenced", error: out.error }, "fenced by another writer; dropping the session");
      killShell(shell, "fenced");
    } else if (out.kind === "failed") {
      killShell(shell, `append failed: ${out.error}`);
    }
    throw new Error(`append of ${event.type} failed (${out.kind}): ${out.error}`);
  }
  foldSessionEvents([out.event], shell.state);
  markLifecycle(shell.marks, out.event, out.seq);
  shell.lastMsgId = restoredMsgId ?? out.event.meta.id;
  shell.snapshotWriter?.folded(shell.state, shell.marks, out.seq, shell.lastMsgId);
  if (!shell.restoring) shell.budget.afterFold(out.event);
  if (out.event.type === "message_end") for (const w of shell.messageEndWaiters.splice(0)) w();
}

/**
 * An append was refused for a passing cause and is being retried (the session keeps its work):
 * counted each time, logged once per outage.
 */
export function noteRefused(shell: SessionShell, event: FleetEvent, failure: PublishFailure): void {
  const cause = publishFailureCause(failure.code);
  shell.deps.metrics.appendsRefused.inc({ cause });
  shell.refusedAttempts++;
  if (shell.refusedSince !== undefined) return;
  shell.refusedSince = shell.deps.now();
  shell.log.warn(
    { evt: "append_refused", cause, code: failure.code, error: failure.error, eventType: event.type },
    cause === "storage_full"
      ? "the event store is full: this session's writes wait for space, retried while the lease is held"
      : "appends are refused: retried while the lease is held",
  );
}

export function noteAppended(shell: SessionShell): void {
  if (shell.refusedSince === undefined) return;
  shell.log.info(
    { evt: "append_resumed", waitedMs: shell.deps.now() - shell.refusedSince, refused: shell.refusedAttempts },
    "appends land again",
  );
  shell.refusedSince = undefined;
  shell.refusedAttempts = 0;
}
