// pi coding-agent's automatic compaction, inside a run: a threshold compaction before an LLM call, and
// an overflow compaction followed by one retry of the call. Decided from the session's fold with the
// shared compaction steps (`../session-core/compaction.ts`); the summary is the injected `summarize`
// port, made through the run's `streamFn`; every effect is an event on the run's sink.
import {
  type AssistantMessage,
  type CompactionPlan,
  type CompactionReason,
  compactionSettingsOf,
  contextAtLeaf,
  type EventDraft,
  isContextOverflow,
  type ModelRef,
  prepareCompaction,
  runCursorOf,
  type SessionState,
  thresholdCompaction,
} from "@fleet/protocol";
import {
  COMPACTION_TEXT,
  type CompactionOutcome,
  compactionEndBody,
  compactionPath,
  decideCompactionEnd,
} from "../session-core/compaction.js";
import { type ResumePoint, resumePointFromCursor } from "./resume-point.js";
import type { LoopState, RunScope } from "./run-scope.js";
import type { SummarizeCompaction } from "./types.js";

/** How a compaction inside a run ended. */
export type AutoCompactionOutcome = CompactionOutcome;

/** pi's `compaction_end.errorMessage` prefixes. */
export const AUTO_COMPACTION_TEXT = {
  overflowFailed: COMPACTION_TEXT.overflowFailed,
  thresholdFailed: COMPACTION_TEXT.thresholdFailed,
} as const;

export interface AutoCompactionOptions {
  /** The session's fold (read only; the shell folds every emitted event before `emit` resolves). */
  session: SessionState;
  /** The model's context window in tokens (pi's `model.contextWindow`). */
  contextWindow: (model: ModelRef) => number;
  /** Makes the summary (`summarizeForCompaction` in production; the engine never imports it). */
  summarize: SummarizeCompaction;
}

/**
 * The run's automatic compaction. Contract: never throws for a failed summary (it ends the
 * compaction with `errorMessage`); rejects only when an emit fails.
 * - `beforeCall`: when the settings are enabled and the context (the last fresh usage plus the
 *   estimate of what follows it) passes `contextWindow - reserveTokens`, and there is something to
 *   compact: `compaction_start {reason: "threshold"}`, the `compaction` entry, `compaction_end`.
 *   The run's context becomes the compacted one. A failed summary leaves the context as it was.
 * - `recoverOverflow`: after an assistant message of the run's own model that reports a context
 *   overflow (pi-ai's `isContextOverflow`, error messages only): an `overflow` compaction ending
 *   `willRetry: true`; true when the caller must retry the call (the error message leaves the
 *   context, as in pi).
 * - `finishOpen`: a resumed run whose compaction was cut finishes it first (redone, or only closed
 *   when its entry is logged; closed `aborted` when the run was aborted) and carries on from where
 *   the log then stands.
 */
export class AutoCompaction {
  private readonly session: SessionState;
  private readonly contextWindow: (model: ModelRef) => number;
  private readonly summarizePort: SummarizeCompaction;

  constructor(options: AutoCompactionOptions) {
    this.session = options.session;
    this.contextWindow = options.contextWindow;
    this.summarizePort = options.summarize;
  }

  async beforeCall(loop: LoopState, run: RunScope): Promise<AutoCompactionOutcome | undefined> {
    if (run.signal?.aborted) return undefined;
    const path = compactionPath(this.session);
    const settings = compactionSettingsOf(this.session.tree.config);
    if (!thresholdCompaction(path, settings, this.contextWindow(loop.model)).compact) return undefined;
    const plan = prepareCompaction(path, settings.keepRecentTokens);
    if (!plan.ok) return undefined;
    await run.sink.emit({ type: "compaction_start", reason: "threshold" });
    return this.summarize("threshold", plan, loop, run);
  }

  async recoverOverflow(message: AssistantMessage, loop: LoopState, run: RunScope): Promise<boolean> {
    const settings = compactionSettingsOf(this.session.tree.config);
    if (!settings.enabled || run.signal?.aborted) return false;
    const sameModel = message.provider === loop.model.provider && message.model === loop.model.modelId;
    if (!sameModel || message.stopReason !== "error") return false;
    if (!isContextOverflow(message, this.contextWindow(loop.model))) return false;
    await run.sink.emit({ type: "compaction_start", reason: "overflow" });
    const plan = prepareCompaction(compactionPath(this.session), settings.keepRecentTokens);
    if (!plan.ok) {
      await run.sink.emit(compactionEndBody("overflow", { errorMessage: COMPACTION_TEXT.overflowFailed(plan.error) }));
      return false;
    }
    return (await this.summarize("overflow", plan, loop, run)) === "compacted";
  }

  async finishOpen(point: ResumePoint, loop: LoopState, run: RunScope): Promise<ResumePoint> {
    const open = this.session.compaction;
    if (!open || open.runId !== point.runId) return point;
    const reason = open.reason;
    if (open.entryId !== undefined) {
      await run.sink.emit(compactionEndBody(reason, { willRetry: reason === "overflow" }));
    } else if (run.signal?.aborted) {
      await run.sink.emit(compactionEndBody(reason, { aborted: true }));
    } else {
      const settings = compactionSettingsOf(this.session.tree.config);
      const plan = prepareCompaction(compactionPath(this.session), settings.keepRecentTokens);
      if (plan.ok) await this.summarize(reason, plan, loop, run);
      else await run.sink.emit(compactionEndBody(reason, { errorMessage: failureText(reason)(plan.error) }));
    }
    this.refreshContext(loop);
    return resumePointFromCursor(runCursorOf(this.session), point.reason) ?? point;
  }

  private async summarize(
    reason: CompactionReason,
    plan: CompactionPlan,
    loop: LoopState,
    run: RunScope,
  ): Promise<AutoCompactionOutcome> {
    const settings = compactionSettingsOf(this.session.tree.config);
    const summary = await this.summarizePort({
      streamFn: run.ports.streamFn,
      model: loop.model,
      thinkingLevel: loop.thinkingLevel,
      plan,
      reserveTokens: settings.reserveTokens,
      ...(run.signal ? { signal: run.signal } : {}),
      now: run.ports.now,
    });
    const close = { reason, plan, failureText: failureText(reason), willRetry: reason === "overflow" };
    const { outcome, events } = decideCompactionEnd(close, summary, run.signal?.aborted === true);
    for (const body of events) await run.sink.emit(body as EventDraft);
    if (outcome === "compacted") this.refreshContext(loop);
    return outcome;
  }

  /** pi: `agent.state.messages = buildSessionContext().messages`, without a trailing error message. */
  private refreshContext(loop: LoopState): void {
    const built = contextAtLeaf(this.session.tree);
    if (!built) return;
    const messages = built.messages.slice();
    const last = messages.at(-1);
    if (last?.role === "assistant" && last.stopReason === "error") messages.pop();
    loop.context = { ...loop.context, messages };
  }
}

const failureText = (reason: CompactionReason) =>
  reason === "overflow" ? COMPACTION_TEXT.overflowFailed : COMPACTION_TEXT.thresholdFailed;
