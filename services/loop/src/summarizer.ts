import {
  addUsage,
  type ContextMessage,
  DEFAULT_COMPACTION_SETTINGS,
  emptyUsage,
  formatFileLists,
  type ModelRef,
  serializeConversation,
  type ThinkingLevel,
} from "@fleet/protocol";
import {
  compactionSummaryRequests,
  NO_PRIOR_HISTORY,
  SUMMARIZATION_SYSTEM_PROMPT,
  type SummaryRequest,
} from "./compaction-prompts.js";
import type { StreamFn, SummarizeCompaction } from "./engine/index.js";

type SummaryOfPlan = Parameters<SummarizeCompaction>[0];

import type { SummaryResult } from "./session-core/compaction.js";

const BRANCH_SECTIONS = `Use this format:

## Goal
## Constraints & Preferences
## Progress
## Key Decisions
## Next Steps`;

export type { SummaryResult };

/** Asks the model for one text answer (no tools); text blocks are joined by `\n` (pi). Contract: never rejects. */
async function complete(
  streamFn: StreamFn,
  model: ModelRef,
  thinkingLevel: ThinkingLevel,
  request: SummaryRequest,
  signal: AbortSignal | undefined,
  now: () => number,
): Promise<SummaryResult> {
  try {
    let final: string | undefined;
    let usage = emptyUsage();
    let error: string | undefined;
    for await (const ev of streamFn(
      {
        systemPrompt: request.systemPrompt,
        messages: [{ role: "user", content: [{ type: "text", text: request.text }], timestamp: now() }],
        tools: [],
      },
      { model, thinkingLevel, maxTokens: request.maxTokens },
      signal,
    )) {
      if (ev.type === "done") {
        usage = ev.message.usage;
        final = ev.message.content
          .filter((b) => b.type === "text")
          .map((b) => (b as { text: string }).text)
          .join("\n");
      } else if (ev.type === "error") error = ev.error.errorMessage ?? ev.reason;
    }
    if (error !== undefined) return { ok: false, error: `Summarization failed: ${error}` };
    if (!final?.trim()) return { ok: false, error: "Summarization failed: the model returned no text" };
    return { ok: true, summary: final.trim(), usage };
  } catch (err) {
    return { ok: false, error: `Summarization failed: ${(err as Error).message}` };
  }
}

/**
 * pi's compaction summary (`compact()`): the history summary (iterative when the plan has a previous
 * summary) and, for a split turn, the turn-prefix summary, made in parallel and joined; then the file
 * lists. The requests are `compactionSummaryRequests`' (pi's texts).
 */
export async function summarizeForCompaction(opts: SummaryOfPlan): Promise<SummaryResult> {
  const reserve = opts.reserveTokens ?? DEFAULT_COMPACTION_SETTINGS.reserveTokens;
  const requests = compactionSummaryRequests(opts.plan, reserve, opts.instructions);
  const ask = (request: SummaryRequest | undefined): Promise<SummaryResult | undefined> =>
    request
      ? complete(opts.streamFn, opts.model, opts.thinkingLevel, request, opts.signal, opts.now)
      : Promise.resolve(undefined);
  const [main, turn] = await Promise.all([ask(requests.history), ask(requests.turnPrefix)]);
  if (main && !main.ok) return main;
  if (turn && !turn.ok) return turn;
  const history = main?.summary ?? NO_PRIOR_HISTORY;
  const body = turn ? `${history}\n\n---\n\n**Turn Context (split turn):**\n\n${turn.summary}` : history;
  const usage = addUsage(main?.usage ?? emptyUsage(), turn?.usage ?? emptyUsage());
  return { ok: true, summary: body + formatFileLists(opts.plan.readFiles, opts.plan.modifiedFiles), usage };
}

/** pi's branch summary of the entries being left. */
export async function summarizeBranch(opts: {
  streamFn: StreamFn;
  model: ModelRef;
  thinkingLevel: ThinkingLevel;
  messages: ContextMessage[];
  instructions?: string | undefined;
  signal?: AbortSignal;
  now: () => number;
}): Promise<SummaryResult> {
  const conversation = `<conversation>\n${serializeConversation(opts.messages)}\n</conversation>`;
  const focus = opts.instructions ? `\n\nAdditional focus: ${opts.instructions}` : "";
  const prompt = `${conversation}\n\nThe user explored this branch and is now going back to an earlier point. Summarize what happened on it.\n\n${BRANCH_SECTIONS}${focus}`;
  const request = { systemPrompt: SUMMARIZATION_SYSTEM_PROMPT, text: prompt, maxTokens: 2048 };
  const result = await complete(opts.streamFn, opts.model, opts.thinkingLevel, request, opts.signal, opts.now);
  return result.ok
    ? {
        ok: true,
        summary: `The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n${result.summary}`,
        usage: result.usage,
      }
    : result;
}
