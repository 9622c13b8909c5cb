// A child's answer to its parent's `agent` call (PROTOCOL "Sub-agents"): the record its owner stores
// on the call's result subject, and the same answer read back from the child's log when that record
// never arrived (change 71). Pure.
import {
  type AgentMessage,
  type ChildResultDetails,
  childCommandIds,
  type FleetEvent,
  finalAssistantText,
  foldSessionSpend,
  initialSessionSpend,
  type SessionSpend,
  type Spend,
  type ToolFinalRecord,
  toolErrorText,
} from "@fleet/protocol";

/** The call's answer when a child's run ends: its final text, or why it has none; with the run's spend. */
export function childAnswerRecord(childId: string, messages: readonly AgentMessage[], spent: Spend): ToolFinalRecord {
  const details: ChildResultDetails = { childSessionId: childId, spend: { ...spent } };
  const text = finalAssistantText(messages);
  if (text === undefined)
    return {
      kind: "result",
      content: [{ type: "text", text: `Sub-agent ${childId} ended without an answer (${stopOf(messages)})` }],
      details,
      isError: true,
    };
  return { kind: "result", content: [{ type: "text", text }], details, isError: false };
}

/** The call's answer when the child refused its parent's prompt (`reason`: `<code>: <reason>`). */
export function childRefusalRecord(childId: string, reason: string): ToolFinalRecord {
  return {
    kind: "result",
    content: [{ type: "text", text: `Sub-agent ${childId} refused the task (${reason})` }],
    details: { childSessionId: childId } satisfies ChildResultDetails,
    isError: true,
  };
}

/** The msgIDs a child's answer is stored under: a run's answer once per owner epoch, a refusal once. */
export const childAnswerMsgIds = {
  result: (childId: string, runId: string, epoch: number | "log") => `${childId}.result.${runId}.${epoch}`,
  refused: (childId: string) => `${childId}.refused`,
};

function stopOf(messages: readonly AgentMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m?.role === "assistant")
      return m.stopReason === "aborted" ? toolErrorText.aborted : (m.errorMessage ?? m.stopReason);
  }
  return "no assistant message";
}

/** The answer a child's log holds for its parent's prompt, and the msgID to store it under. */
export interface LoggedAnswer {
  msgId: string;
  record: ToolFinalRecord;
}

/** A child's log folded from its start, event by event, looking for the answer to its parent's prompt. */
export interface ChildAnswerFold {
  readonly childId: string;
  /**
   * The child's spend folded as the session's fold folds it (`foldSessionSpend`): the run's, as its
   * owner had it at `agent_end`. Nothing else of the child's log is kept.
   */
  readonly spend: SessionSpend;
  /** The parent's prompt was accepted: the next run's end answers it. */
  accepted: boolean;
  answer: LoggedAnswer | undefined;
}

export function childAnswerFold(childId: string): ChildAnswerFold {
  return { childId, spend: initialSessionSpend(), accepted: false, answer: undefined };
}

/**
 * Folds the child's next event. The answer is the first one: the prompt's rejection (the refusal),
 * or the end of the first run after the prompt's acceptance, the record its owner would have stored
 * (its `childFinished`). Later events change nothing once the answer is known.
 */
export function foldChildAnswer(fold: ChildAnswerFold, event: FleetEvent): void {
  if (fold.answer) return;
  foldSessionSpend(fold.spend, event);
  const prompt = childCommandIds(fold.childId).prompt;
  if (event.type === "command_rejected" && event.commandId === prompt) {
    const reason = `${event.code}: ${event.reason}`;
    fold.answer = { msgId: childAnswerMsgIds.refused(fold.childId), record: childRefusalRecord(fold.childId, reason) };
  } else if (event.type === "command_accepted" && event.commandId === prompt) {
    fold.accepted = true;
  } else if (event.type === "agent_end" && fold.accepted) {
    const runId = event.meta.runId ?? event.meta.id;
    fold.answer = {
      msgId: childAnswerMsgIds.result(fold.childId, runId, "log"),
      record: childAnswerRecord(fold.childId, event.messages, fold.spend.run),
    };
  }
}
