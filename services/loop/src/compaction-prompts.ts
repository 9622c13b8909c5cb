// pi coding-agent 0.73.1's compaction summary requests (core/compaction/compaction.js, utils.js),
// text for text: a differential test compares them with pi's own.
import { type CompactionPlan, type ContextMessage, serializeConversation } from "@fleet/protocol";

export const SUMMARIZATION_SYSTEM_PROMPT = `You are a context summarization assistant. Your task is to read a conversation between a user and an AI coding assistant, then produce a structured summary following the exact format specified.

Do NOT continue the conversation. Do NOT respond to any questions in the conversation. ONLY output the structured summary.`;

const SUMMARIZATION_PROMPT = `The messages above are a conversation to summarize. Create a structured context checkpoint summary that another LLM will use to continue the work.

Use this EXACT format:

## Goal
[What is the user trying to accomplish? Can be multiple items if the session covers different tasks.]

## Constraints & Preferences
- [Any constraints, preferences, or requirements mentioned by user]
- [Or "(none)" if none were mentioned]

## Progress
### Done
- [x] [Completed tasks/changes]

### In Progress
- [ ] [Current work]

### Blocked
- [Issues preventing progress, if any]

## Key Decisions
- **[Decision]**: [Brief rationale]

## Next Steps
1. [Ordered list of what should happen next]

## Critical Context
- [Any data, examples, or references needed to continue]
- [Or "(none)" if not applicable]

Keep each section concise. Preserve exact file paths, function names, and error messages.`;

const UPDATE_SUMMARIZATION_PROMPT = `The messages above are NEW conversation messages to incorporate into the existing summary provided in <previous-summary> tags.

Update the existing structured summary with new information. RULES:
- PRESERVE all existing information from the previous summary
- ADD new progress, decisions, and context from the new messages
- UPDATE the Progress section: move items from "In Progress" to "Done" when completed
- UPDATE "Next Steps" based on what was accomplished
- PRESERVE exact file paths, function names, and error messages
- If something is no longer relevant, you may remove it

Use this EXACT format:

## Goal
[Preserve existing goals, add new ones if the task expanded]

## Constraints & Preferences
- [Preserve existing, add new ones discovered]

## Progress
### Done
- [x] [Include previously done items AND newly completed items]

### In Progress
- [ ] [Current work - update based on progress]

### Blocked
- [Current blockers - remove if resolved]

## Key Decisions
- **[Decision]**: [Brief rationale] (preserve all previous, add new)

## Next Steps
1. [Update based on current state]

## Critical Context
- [Preserve important context, add new if needed]

Keep each section concise. Preserve exact file paths, function names, and error messages.`;

const TURN_PREFIX_SUMMARIZATION_PROMPT = `This is the PREFIX of a turn that was too large to keep. The SUFFIX (recent work) is retained.

Summarize the prefix to provide context for the retained suffix:

## Original Request
[What did the user ask for in this turn?]

## Early Progress
- [Key decisions and work done in the prefix]

## Context for Suffix
- [Information needed to understand the retained recent work]

Be concise. Focus on what's needed to understand the kept suffix.`;

/** pi's text for a split turn with nothing before the turn. */
export const NO_PRIOR_HISTORY = "No prior history.";

/** One summary call: a system prompt and one user text message, with its output budget. */
export interface SummaryRequest {
  systemPrompt: string;
  /** The user message's one text block. */
  text: string;
  maxTokens: number;
}

/** pi's `generateSummary` request: the history, iterative when a previous summary exists. */
export function historySummaryRequest(
  messages: readonly ContextMessage[],
  reserveTokens: number,
  instructions: string | undefined,
  previousSummary: string | undefined,
): SummaryRequest {
  let base = previousSummary ? UPDATE_SUMMARIZATION_PROMPT : SUMMARIZATION_PROMPT;
  if (instructions) base = `${base}\n\nAdditional focus: ${instructions}`;
  let text = `<conversation>\n${serializeConversation(messages)}\n</conversation>\n\n`;
  if (previousSummary) text += `<previous-summary>\n${previousSummary}\n</previous-summary>\n\n`;
  text += base;
  return { systemPrompt: SUMMARIZATION_SYSTEM_PROMPT, text, maxTokens: Math.floor(0.8 * reserveTokens) };
}

/** pi's `generateTurnPrefixSummary` request (no custom instructions, half the budget). */
export function turnPrefixSummaryRequest(messages: readonly ContextMessage[], reserveTokens: number): SummaryRequest {
  const text = `<conversation>\n${serializeConversation(messages)}\n</conversation>\n\n${TURN_PREFIX_SUMMARIZATION_PROMPT}`;
  return { systemPrompt: SUMMARIZATION_SYSTEM_PROMPT, text, maxTokens: Math.floor(0.5 * reserveTokens) };
}

/**
 * The requests pi's `compact()` makes for `plan`, in its order: for a split turn with a prefix, the
 * history (absent when there is no history: pi uses `NO_PRIOR_HISTORY`) and the turn prefix;
 * otherwise the history alone.
 */
export function compactionSummaryRequests(
  plan: CompactionPlan,
  reserveTokens: number,
  instructions: string | undefined,
): { history: SummaryRequest | undefined; turnPrefix: SummaryRequest | undefined } {
  const split = plan.isSplitTurn && plan.turnPrefixMessages.length > 0;
  const history =
    split && plan.messages.length === 0
      ? undefined
      : historySummaryRequest(plan.messages, reserveTokens, instructions, plan.previousSummary);
  return { history, turnPrefix: split ? turnPrefixSummaryRequest(plan.turnPrefixMessages, reserveTokens) : undefined };
}
