// The standalone compaction (the `compact` command's effect): the shared compaction steps of
// `../session-core/compaction.ts`, carried out on the shell's appender. A run's own automatic
// compaction takes the same steps on the run's sink (`../engine/auto-compaction.ts`).
import { compactionSettingsOf, type EventDraft } from "@fleet/protocol";
import { COMPACTION_TEXT, compactionEndBody, decideCompactionEnd, planCompaction } from "../session-core/compaction.js";
import { summarizeForCompaction } from "../summarizer.js";
import { providerStreamFn, traced, withContent } from "./llm-ports.js";
import { appendDraft, type SessionShell } from "./session-shell.js";

/**
 * Carries out the standalone compaction whose `compaction_start` (id `compactionId`) is in the
 * log: summarise the branch, append the `compaction` entry and `compaction_end`, then flush the
 * writes it deferred. A compaction whose entry is already logged only gets its `compaction_end`;
 * one an accepted `abort` cancelled ends with `compaction_end {aborted: true}`.
 */
export function startCompaction(shell: SessionShell, compactionId: string): void {
  const abort = new AbortController();
  const done = compact(shell, compactionId, abort.signal)
    .catch((err) => {
      if (!shell.detached) shell.log.warn({ err, compactionId }, "compaction failed to record");
    })
    .finally(() => {
      if (shell.compaction?.abort === abort) shell.compaction = undefined;
      shell.lastUsed = shell.deps.now();
    });
  shell.compaction = { abort, done };
}

async function compact(shell: SessionShell, compactionId: string, signal: AbortSignal): Promise<void> {
  const state = shell.state;
  const open = state.compaction;
  if (!open || open.id !== compactionId) return;
  const append = (body: EventDraft) => appendDraft(shell, { id: shell.deps.newId(), body });
  if (open.entryId !== undefined || open.abortRequested) {
    await append(compactionEndBody(open.reason, { aborted: open.entryId === undefined }));
    return flushDeferred(shell);
  }
  const plan = planCompaction(state);
  if (!plan.ok) {
    await append(compactionEndBody(open.reason, { errorMessage: COMPACTION_TEXT.failed(plan.error) }));
    return flushDeferred(shell);
  }
  const settings = compactionSettingsOf(state.tree.config);
  const engine = shell.engine.state;
  const provider = providerStreamFn(shell, engine.model.provider);
  const summary = await summarizeForCompaction({
    streamFn: (context, options, llmSignal) => provider(context, traced(shell, options), llmSignal),
    model: engine.model,
    thinkingLevel: engine.thinkingLevel,
    plan: await withContent(shell, plan),
    instructions: open.instructions,
    reserveTokens: settings.reserveTokens,
    signal,
    now: shell.deps.now,
  });
  if (shell.detached) return;
  const aborted = signal.aborted || state.compaction?.abortRequested === true;
  const close = { reason: open.reason, plan, failureText: COMPACTION_TEXT.failed, willRetry: false };
  for (const body of decideCompactionEnd(close, summary, aborted).events) await append(body);
  return flushDeferred(shell);
}

/** Writes deferred while the compaction was open are carried out once it closed (unless a run took them). */
async function flushDeferred(shell: SessionShell): Promise<void> {
  if (shell.state.pendingWrites.length > 0 && !shell.engine.state.isStreaming) await shell.engine.flushWrites();
}
