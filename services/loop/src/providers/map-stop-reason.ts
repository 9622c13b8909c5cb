/** Outcome of an Anthropic `stop_reason`: a pi stop reason, or an error text naming the reason. */
export type MappedStopReason =
  | { readonly ok: true; readonly reason: "stop" | "length" | "toolUse" }
  | { readonly ok: false; readonly errorMessage: string };

const ERROR_TEXTS: Readonly<Record<string, string>> = {
  pause_turn: "the API paused a long-running turn (pause_turn), which Fleet does not resume",
  refusal: "the model refused to continue (refusal)",
  model_context_window_exceeded: "the conversation exceeded the model's context window (model_context_window_exceeded)",
};

/**
 * `end_turn` → stop, `max_tokens` → length, `tool_use` → toolUse, `stop_sequence` → stop (Fleet sets no stop
 * sequences); anything else (pause_turn, refusal, model_context_window_exceeded, unknown values, or no
 * stop_reason at all) → an error whose text names the reason.
 */
export function mapStopReason(stopReason: string | null | undefined): MappedStopReason {
  switch (stopReason) {
    case "end_turn":
    case "stop_sequence":
      return { ok: true, reason: "stop" };
    case "max_tokens":
      return { ok: true, reason: "length" };
    case "tool_use":
      return { ok: true, reason: "toolUse" };
    case null:
    case undefined:
      return { ok: false, errorMessage: "Anthropic stream ended without a stop_reason" };
    default:
      return {
        ok: false,
        errorMessage: `Anthropic stopped with stop_reason "${stopReason}": ${ERROR_TEXTS[stopReason] ?? "this stop reason is not supported"}`,
      };
  }
}
