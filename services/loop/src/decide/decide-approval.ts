// `approve_tool_call` / `deny_tool_call`: decided against the gate the log shows waiting.
import type { CommandOf, SessionState } from "@fleet/protocol";
import type { DraftEvent } from "../session-core/drafts.js";
import { approvalExpired, isAwaitingApproval } from "./approval-gate.js";
import { accepted, DECIDER_TEXT, type OutcomeContext, rejected } from "./command-outcomes.js";
import type { DecideContext, Decision } from "./decision.js";

/**
 * `approve_tool_call` / `deny_tool_call`: the call must wait at its gate and its request must not
 * have expired at `ctx.now` (an expired one is refused `conflict`; the loop logs the expiry). Edited
 * arguments must fit the tool's schema (`invalid` otherwise); the decision records them as given.
 */
export function decideApproval(
  state: SessionState,
  cmd: CommandOf<"approve_tool_call" | "deny_tool_call">,
  ctx: OutcomeContext,
): Decision {
  if (!isAwaitingApproval(state, cmd.toolCallId)) {
    return rejected(ctx, cmd.id, cmd.type, "not_found", DECIDER_TEXT.notWaiting(cmd.toolCallId));
  }
  if (approvalExpired(state, cmd.toolCallId, ctx.now)) {
    return rejected(ctx, cmd.id, cmd.type, "conflict", DECIDER_TEXT.approvalExpired(cmd.toolCallId));
  }
  if (cmd.type === "approve_tool_call" && cmd.args !== undefined) {
    const toolName = state.approvals.get(cmd.toolCallId)?.toolName ?? "";
    const valid = ctx.validateToolArgs?.(toolName, cmd.args) ?? { ok: true };
    if (!valid.ok) return rejected(ctx, cmd.id, cmd.type, "invalid", DECIDER_TEXT.badEditedArgs(toolName, valid.error));
  }
  return accepted(ctx, cmd, [approvalDraft(ctx, cmd)], [{ type: "approval_decided", toolCallId: cmd.toolCallId }]);
}

export function approvalDraft(ctx: DecideContext, cmd: CommandOf<"approve_tool_call" | "deny_tool_call">): DraftEvent {
  return {
    id: ctx.newId(),
    body:
      cmd.type === "approve_tool_call"
        ? {
            type: "tool_approval_resolved",
            toolCallId: cmd.toolCallId,
            approved: true,
            ...(cmd.args !== undefined ? { editedArgs: cmd.args } : {}),
          }
        : {
            type: "tool_approval_resolved",
            toolCallId: cmd.toolCallId,
            approved: false,
            ...(cmd.reason !== undefined ? { reason: cmd.reason } : {}),
          },
  };
}
