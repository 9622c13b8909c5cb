// The answer of a run as an MCP client sees it: the last assistant message of its `agent_end` (pure).
import { type AgentMessage, parseModelName } from "@fleet/protocol";

export interface FinalAnswer {
  /** The text blocks of the run's last assistant message, joined by blank lines ("" when it had none). */
  text: string;
  /** Its stop reason (`stop`, `length`, `toolUse`, `error`, `aborted`), or `none` when the run had no assistant message. */
  stopReason: string;
  /** The LLM's error, when the run ended with one. */
  errorMessage?: string;
}

export function decideFinalAnswer(messages: readonly AgentMessage[]): FinalAnswer {
  const last = [...messages].reverse().find((m) => (m as { role?: string }).role === "assistant") as
    | { content?: unknown; stopReason?: string; errorMessage?: string }
    | undefined;
  if (!last) return { text: "", stopReason: "none" };
  const blocks = Array.isArray(last.content) ? (last.content as { type?: string; text?: unknown }[]) : [];
  const text = blocks
    .filter((b) => b.type === "text" && typeof b.text === "string")
    .map((b) => b.text as string)
    .join("\n\n");
  return {
    text,
    stopReason: last.stopReason ?? "stop",
    ...(last.errorMessage ? { errorMessage: last.errorMessage } : {}),
  };
}

/** `provider/modelId`, or a bare model id of the default provider (`anthropic`). */
export function parseModelArg(model: string): { provider: string; modelId: string } {
  return parseModelName(model);
}
