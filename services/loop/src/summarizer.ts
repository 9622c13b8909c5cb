import {
  type CompactionPlan,
  type ContextMessage,
  formatFileLists,
  type ModelRef,
  serializeConversation,
  type ThinkingLevel,
} from "@fleet/protocol";
import type { StreamFn } from "./engine/index.js";

const SUMMARIZER_SYSTEM =
  "You are a context summarization assistant. Read the conversation and produce a structured summary. " +
  "Do not continue the conversation and do not answer questions in it.";

const COMPACTION_SECTIONS = `Use this format:

## Goal
## Constraints & Preferences
## Progress
### Done
### In Progress
### Blocked
## Key Decisions
## Next Steps
## Critical Context`;

const BRANCH_SECTIONS = `Use this format:

## Goal
## Constraints & Preferences
## Progress
## Key Decisions
## Next Steps`;

export type SummaryResult = { ok: true; summary: string } | { ok: false; error: string };

/** Asks the model for one text answer (no tools). Contract: never rejects. */
async function complete(
  streamFn: StreamFn,
  model: ModelRef,
  thinkingLevel: ThinkingLevel,
  prompt: string,
  maxTokens: number,
  signal: AbortSignal | undefined,
  now: () => number,
): Promise<SummaryResult> {
  try {
    let final: string | undefined;
    let error: string | undefined;
    for await (const ev of streamFn(
      {
        systemPrompt: SUMMARIZER_SYSTEM,
        messages: [{ role: "user", content: [{ type: "text", text: prompt }], timestamp: now() }],
        tools: [],
      },
      { model, thinkingLevel, maxTokens },
      signal,
    )) {
      if (ev.type === "done") {
        final = ev.message.content
          .filter((b) => b.type === "text")
          .map((b) => (b as { text: string }).text)
          .join("");
      } else if (ev.type === "error") error = ev.error.errorMessage ?? ev.reason;
    }
    if (error !== undefined) return { ok: false, error: `Summarization failed: ${error}` };
    if (!final?.trim()) return { ok: false, error: "Summarization failed: the model returned no text" };
    return { ok: true, summary: final.trim() };
  } catch (err) {
    return { ok: false, error: `Summarization failed: ${(err as Error).message}` };
  }
}

/** pi's compaction summary: history (iterative when a previous summary exists), split-turn prefix, file lists. */
export async function summarizeForCompaction(opts: {
  streamFn: StreamFn;
  model: ModelRef;
  thinkingLevel: ThinkingLevel;
  plan: CompactionPlan;
  instructions?: string | undefined;
  reserveTokens?: number;
  signal?: AbortSignal;
  now: () => number;
}): Promise<SummaryResult> {
  const reserve = opts.reserveTokens ?? 16_384;
  const focus = opts.instructions ? `\n\nAdditional focus: ${opts.instructions}` : "";
  const history = async (): Promise<SummaryResult> => {
    if (opts.plan.messages.length === 0) return { ok: true, summary: "No prior history." };
    const conversation = `<conversation>\n${serializeConversation(opts.plan.messages)}\n</conversation>`;
    const prompt = opts.plan.previousSummary
      ? `${conversation}\n\n<previous-summary>\n${opts.plan.previousSummary}\n</previous-summary>\n\nUpdate the previous summary with the new conversation. Preserve its content, move finished in-progress items to Done, and refresh Next Steps.\n\n${COMPACTION_SECTIONS}${focus}`
      : `${conversation}\n\nSummarize this conversation so that work can continue from the summary alone.\n\n${COMPACTION_SECTIONS}${focus}`;
    return complete(
      opts.streamFn,
      opts.model,
      opts.thinkingLevel,
      prompt,
      Math.floor(0.8 * reserve),
      opts.signal,
      opts.now,
    );
  };
  const prefix = async (): Promise<SummaryResult> => {
    const conversation = `<conversation>\n${serializeConversation(opts.plan.turnPrefixMessages)}\n</conversation>`;
    const prompt = `${conversation}\n\nThis is the beginning of a turn whose end is kept verbatim. Summarize it.\n\n## Original Request\n## Early Progress\n## Context for Suffix${focus}`;
    return complete(
      opts.streamFn,
      opts.model,
      opts.thinkingLevel,
      prompt,
      Math.floor(0.5 * reserve),
      opts.signal,
      opts.now,
    );
  };
  const [main, turn] = await Promise.all([history(), opts.plan.isSplitTurn ? prefix() : Promise.resolve(undefined)]);
  if (!main.ok) return main;
  if (turn && !turn.ok) return turn;
  const body = turn ? `${main.summary}\n\n---\n\n**Turn Context (split turn):**\n\n${turn.summary}` : main.summary;
  return { ok: true, summary: body + formatFileLists(opts.plan.readFiles, opts.plan.modifiedFiles) };
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
  const result = await complete(opts.streamFn, opts.model, opts.thinkingLevel, prompt, 2048, opts.signal, opts.now);
  return result.ok
    ? {
        ok: true,
        summary: `The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n${result.summary}`,
      }
    : result;
}
