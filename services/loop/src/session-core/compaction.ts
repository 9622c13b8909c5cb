// Compaction, written once. The pure steps every compaction takes: where the path is, what to cut
// (`planCompaction`), and the events that close it once its summary is back (`decideCompactionEnd`).
// Two callers carry them out: a run's automatic compaction (`engine/auto-compaction.ts`, on the run's
// sink) and the standalone `compact` command (`session/compaction-runner.ts`, on the shell's
// appender). The summary itself is a port (`summarizer.ts` in production), never imported here.
import {
  type CompactionPlan,
  type CompactionReason,
  compactionSettingsOf,
  type EventDraft,
  getBranch,
  prepareCompaction,
  type SessionEntry,
  type SessionState,
  type Usage,
} from "@fleet/protocol";

/** A summary's outcome. `usage`: what its LLM calls spent (their `done` messages' usage, summed). */
export type SummaryResult = { ok: true; summary: string; usage: Usage } | { ok: false; error: string };

/** pi's `compaction_end.errorMessage` texts. */
export const COMPACTION_TEXT = {
  /** A standalone compaction (the `compact` command). */
  failed: (error: string) => `Compaction failed: ${error}`,
  overflowFailed: (error: string) => `Context overflow recovery failed: ${error}`,
  thresholdFailed: (error: string) => `Auto-compaction failed: ${error}`,
} as const;

/** How a compaction ended. */
export type CompactionOutcome = "compacted" | "failed" | "aborted";

/** The entries of the session's current path (empty when the leaf cannot be walked). */
export function compactionPath(state: SessionState): SessionEntry[] {
  const branch = getBranch(state.tree, state.tree.leafId);
  return branch.ok ? branch.entries : [];
}

/** What to summarise and what to keep of the session's path, by its `compaction` settings. */
export function planCompaction(state: SessionState): CompactionPlan | { ok: false; error: string } {
  const branch = getBranch(state.tree, state.tree.leafId);
  if (!branch.ok) return branch;
  return prepareCompaction(branch.entries, compactionSettingsOf(state.tree.config).keepRecentTokens);
}

/** `compaction_end`. `willRetry`: an overflowed LLM call is made again right after. */
export function compactionEndBody(
  reason: CompactionReason,
  fields: { aborted?: boolean; willRetry?: boolean; errorMessage?: string | undefined },
): EventDraft {
  return {
    type: "compaction_end",
    reason,
    aborted: fields.aborted ?? false,
    willRetry: fields.willRetry ?? false,
    ...(fields.errorMessage !== undefined ? { errorMessage: fields.errorMessage } : {}),
  };
}

/** How one compaction closes: its reason, the `errorMessage` of a failure, and whether a call is retried. */
export interface CompactionClose {
  reason: CompactionReason;
  plan: CompactionPlan;
  failureText: (error: string) => string;
  /** `compaction_end.willRetry` when it compacted (an overflow recovery). */
  willRetry: boolean;
}

/**
 * The events that close a compaction once its summary is back (or was cut): `aborted` → an aborted
 * end; a failed summary → an end with its error; else the `compaction` entry and the end.
 */
export function decideCompactionEnd(
  close: CompactionClose,
  summary: SummaryResult,
  aborted: boolean,
): { outcome: CompactionOutcome; events: EventDraft[] } {
  if (aborted) return { outcome: "aborted", events: [compactionEndBody(close.reason, { aborted: true })] };
  if (!summary.ok) {
    const errorMessage = close.failureText(summary.error);
    return { outcome: "failed", events: [compactionEndBody(close.reason, { errorMessage })] };
  }
  const plan = close.plan;
  const entry: EventDraft = {
    type: "compaction",
    summary: summary.summary,
    firstKeptEntryId: plan.firstKeptEntryId,
    tokensBefore: plan.tokensBefore,
    details: { readFiles: plan.readFiles, modifiedFiles: plan.modifiedFiles },
    usage: summary.usage,
  };
  return { outcome: "compacted", events: [entry, compactionEndBody(close.reason, { willRetry: close.willRetry })] };
}
