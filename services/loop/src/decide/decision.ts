// What deciding a command yields: the events to append and the effects to start, or what the
// shell must fetch first. Plain data; the decider that makes it has no I/O.
import type {
  AgentMessage,
  AgentVersion,
  ArchiveHeader,
  ArchiveRef,
  BudgetLimits,
  ContextMessage,
  LifecycleRecord,
  ModelRef,
  RejectionCode,
  SessionConfig,
  SessionTree,
  Spend,
  ThinkingLevel,
  Usage,
} from "@fleet/protocol";
import type { DraftEvent } from "../session-core/drafts.js";

/** Something the shell starts once the decision's events are appended. */
export type Effect =
  /** A prompt run: the engine drains `nextTurn` first (harness order), then injects `messages`. */
  | { type: "start_run"; kind: "prompt"; messages: AgentMessage[] }
  /** pi's `continue()` (its decision table was checked against the log). */
  | { type: "start_run"; kind: "continue" }
  /** Abort the session's run: the LLM stream and the tool calls in flight are cancelled. */
  | { type: "abort_run" }
  /** A tool call's approval decision is in the log: the run waiting at its gate goes on. */
  | { type: "approval_decided"; toolCallId: string }
  /**
   * Carry out the compaction whose `compaction_start` (id `compactionId`) is in the log: summarise
   * the branch, append the `compaction` entry and `compaction_end` (a new owner does the same from
   * the log alone).
   */
  | { type: "compact"; compactionId: string }
  /** Cancel the open compaction: it ends with `compaction_end {aborted: true}`. */
  | { type: "abort_compaction" }
  /** A `config_change` was appended: a running run takes a new system prompt at its next turn. */
  | { type: "config_changed"; systemPrompt: string | undefined }
  /** Carry out (or go on with) the deletion whose tombstone is in the log (`SessionState.deleting`). */
  | { type: "delete_session" }
  /** Carry out (or go on with) the restore whose `session_restoring` is in the log. */
  | { type: "restore_session" };

export type Decision =
  /** The outcome and the acceptance's events, in append order, then the effects. */
  | { kind: "decided"; events: DraftEvent[]; effects: Effect[] }
  /**
   * The session's creation (`commandId`) was accepted and its `session_created` is not in the log
   * yet (a write the crash or a full store cut): decided before it, a command would find no
   * session, or create a second one. The shell leaves the command for later (a nak); the
   * creation's redelivery completes it first. Bounded (`MAX_CREATION_WAITS` deliveries): a
   * creation whose command the stream lost would otherwise hold every command forever.
   */
  | { kind: "after_creation"; commandId: string }
  /** `create_session {forkFrom}`: decide again with the source session's tree (`forkSource`). */
  | { kind: "needs_fork_source"; sessionId: string }
  /**
   * `navigate {summarize}`: decide again with the summary of `messages` (`branchSummary`). The
   * summary is made before the outcome, so a failed one is a rejection.
   */
  /**
   * `create_session {agent}` / `set_agent`: decide again with the agent's version (`agentVersion`),
   * `version` absent: the latest.
   */
  | { kind: "needs_agent_version"; name: string; version: number | undefined }
  /** A lifecycle command: decide again with what the archive holds of the session (`archive`). */
  | { kind: "needs_archive"; sessionId: string }
  /**
   * A deletion for a session without a log: decide again with its last lifecycle record
   * (`lastLifecycle`), which tells a deletion that already finished from one of an unknown session.
   */
  | { kind: "needs_lifecycle_record"; sessionId: string }
  | {
      kind: "needs_branch_summary";
      messages: ContextMessage[];
      instructions: string | undefined;
      model: ModelRef;
      thinkingLevel: ThinkingLevel;
    };

/** What the decider needs besides the log: time, ids, the worker's settings and fetched inputs. */
export interface DecideContext {
  /** ms since the epoch (message timestamps). */
  now: number;
  newId: () => string;
  /** Config of a session created without one (PROTOCOL "Defaults"). */
  defaults: SessionConfig;
  /** True when a registered tool has this name. */
  isKnownTool: (name: string) => boolean;
  /**
   * Checks edited arguments of an approval against the tool's schema (absent: not checked here;
   * the gate checks them again before the call runs).
   */
  validateToolArgs?: ((toolName: string, args: unknown) => { ok: true } | { ok: false; error: string }) | undefined;
  /** The fork source's tree (`null`: no such session), once the shell fetched it. */
  forkSource?: SessionTree | null | undefined;
  /**
   * The tenant's daily limits and what all its sessions spent today (the day totals of KV `fleet_spend_totals`), for the
   * commands that start a run; absent: no tenant budget.
   */
  tenantBudget?: { limits: BudgetLimits | undefined; spent: Spend } | undefined;
  /** Where this worker writes the archive of a session (`archive_session`). */
  archiveRef?: ((sessionId: string) => ArchiveRef) | undefined;
  /** The session's archive (`null`: none), once the shell read its header. */
  archive?: { header: ArchiveHeader; ref: ArchiveRef } | null | undefined;
  /** The session's last lifecycle record (`null`: none), once the shell read it. */
  lastLifecycle?: LifecycleRecord | null | undefined;
  /** The agent version a command names (`null`: no such agent or version), once the shell read it. */
  agentVersion?: AgentVersion | null | undefined;
  /**
   * How many times the command was delivered (1: the first). A command that met a cut creation is
   * decided as usual from `MAX_CREATION_WAITS` deliveries on (`after_creation`).
   */
  deliveries?: number | undefined;
  /** The branch summary, once the shell made it. */
  branchSummary?: { ok: true; summary: string; usage?: Usage } | { ok: false; error: string } | undefined;
}

/** A command as the shell got it: decoded, or undecodable with the rejection it earned. */
export type CommandInput =
  | { ok: true; command: import("@fleet/protocol").FleetCommand }
  | { ok: false; commandId: string; commandType: string; code: RejectionCode; reason: string };
