// pi coding-agent's convertToLlm: context messages → the three provider roles.
import type { ContextMessage, LlmMessage } from "../messages.js";

/** Text around a compaction summary when it is sent to the LLM (pi's wording). */
export const COMPACTION_SUMMARY_PREFIX =
  "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
export const COMPACTION_SUMMARY_SUFFIX = "\n</summary>";
/** Text around a branch summary when it is sent to the LLM (pi's wording). */
export const BRANCH_SUMMARY_PREFIX =
  "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
export const BRANCH_SUMMARY_SUFFIX = "</summary>";

/**
 * user, assistant and toolResult pass through unchanged; custom → a user message with the same
 * content (a string becomes one text block); branchSummary / compactionSummary → a user message of
 * one text block, the summary wrapped in the prefix and suffix above. Timestamps are kept.
 */
export function convertToLlm(messages: readonly ContextMessage[]): LlmMessage[] {
  return messages.map((m): LlmMessage => {
    switch (m.role) {
      case "custom":
        return {
          role: "user",
          content: typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content,
          timestamp: m.timestamp,
        };
      case "branchSummary":
        return {
          role: "user",
          content: [{ type: "text", text: BRANCH_SUMMARY_PREFIX + m.summary + BRANCH_SUMMARY_SUFFIX }],
          timestamp: m.timestamp,
        };
      case "compactionSummary":
        return {
          role: "user",
          content: [{ type: "text", text: COMPACTION_SUMMARY_PREFIX + m.summary + COMPACTION_SUMMARY_SUFFIX }],
          timestamp: m.timestamp,
        };
      default:
        return m;
    }
  });
}
