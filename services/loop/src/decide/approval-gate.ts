// The approval gate's decisions (PROTOCOL "Approvals"), pure: what a tool call's preflight does
// given the session's fold and the rules in force, and when a waiting request expires.
import { type ApprovalDecision, type ApprovalLayer, evaluateApprovalPolicy, type SessionState } from "@fleet/protocol";
import type { DraftEvent } from "../session-core/drafts.js";
import type { Decision } from "./decision.js";

/** The tool result texts of calls the gate does not let run. */
export const APPROVAL_TEXT = {
  denied: "Tool call denied",
  expired: "Tool call not approved in time: its approval request expired",
  aborted: "Operation aborted",
  unrecorded: "approval request could not be recorded",
  policy: (scope: string, index: number, reason: string | undefined) =>
    `Tool call denied by policy (${scope} rule ${index})${reason ? `: ${reason}` : ""}`,
} as const;

export interface GateCall {
  toolCallId: string;
  toolName: string;
  args: unknown;
}

/** What the gate does with one call. */
export type GateStep =
  /** Run it; with `args`, with these (an approval with edited arguments). */
  | { kind: "run"; args?: unknown }
  /** Do not run it: the model gets an error result with `reason`. */
  | { kind: "refuse"; reason: string }
  /** Append `request`, then wait for a decision (or `expiresAt`). */
  | { kind: "request"; request: DraftEvent; expiresAt: number | undefined }
  /** The request is logged: wait for a decision (or `expiresAt`). */
  | { kind: "wait"; expiresAt: number | undefined };

const RUN: GateStep = { kind: "run" };

/**
 * The gate for one call. A decision already logged (a resumed run) is used as it is; a logged
 * request is waited on again, never made twice, whatever the rules say now; otherwise the rules
 * decide (`layers`, first match wins): `allow` runs, `deny` refuses, `ask` makes a request, whose
 * `expiresAt` is `now` plus the rule's `expiresInMs`.
 */
export function decideApprovalGate(
  state: SessionState,
  call: GateCall,
  layers: readonly ApprovalLayer[],
  now: number,
  newId: () => string,
): GateStep {
  const logged = state.approvals.get(call.toolCallId);
  if (logged?.decision) return stepOfDecision(logged.decision);
  if (logged) return { kind: "wait", expiresAt: logged.expiresAt };
  const verdict = evaluateApprovalPolicy(layers, call.toolName, call.args);
  if (verdict.action === "allow" || !verdict.rule) return RUN;
  const { scope, index, value } = verdict.rule;
  if (verdict.action === "deny") return { kind: "refuse", reason: APPROVAL_TEXT.policy(scope, index, value.reason) };
  const expiresAt = value.expiresInMs !== undefined ? now + value.expiresInMs : undefined;
  const request: DraftEvent = {
    id: newId(),
    body: {
      type: "tool_approval_requested",
      toolCallId: call.toolCallId,
      toolName: call.toolName,
      args: call.args,
      rule: { scope, index, ...(value.reason !== undefined ? { reason: value.reason } : {}) },
      ...(expiresAt !== undefined ? { expiresAt } : {}),
    },
  };
  return { kind: "request", request, expiresAt };
}

/** What a logged decision means for the call. */
export function stepOfDecision(decision: ApprovalDecision): GateStep {
  if (decision.approved) return decision.editedArgs !== undefined ? { kind: "run", args: decision.editedArgs } : RUN;
  if (decision.outcome === "expired") return { kind: "refuse", reason: APPROVAL_TEXT.expired };
  return { kind: "refuse", reason: decision.reason ?? APPROVAL_TEXT.denied };
}

/** A tool call waits at its approval gate: requested, not ended, no decision logged. */
export function isAwaitingApproval(state: SessionState, toolCallId: string): boolean {
  const cursor = state.cursor;
  return (
    cursor.kind === "tools_pending" &&
    cursor.awaitingApprovalIds.includes(toolCallId) &&
    state.approvals.get(toolCallId)?.decision === undefined
  );
}

/** The request of `toolCallId` waits and its `expiresAt` has passed at `now`. */
export function approvalExpired(state: SessionState, toolCallId: string, now: number): boolean {
  const record = state.approvals.get(toolCallId);
  return (
    record !== undefined && record.decision === undefined && record.expiresAt !== undefined && now >= record.expiresAt
  );
}

/**
 * The expiry timer of a request fired (input: a timer): when the call still waits and its
 * `expiresAt` passed, `tool_approval_resolved {approved: false, outcome: "expired"}` and the gate
 * goes on; otherwise (decided meanwhile, ended, or early) nothing.
 */
export function decideApprovalExpiry(
  state: SessionState,
  toolCallId: string,
  now: number,
  newId: () => string,
): Decision {
  if (!isAwaitingApproval(state, toolCallId) || !approvalExpired(state, toolCallId, now)) {
    return { kind: "decided", events: [], effects: [] };
  }
  return {
    kind: "decided",
    events: [
      {
        id: newId(),
        body: { type: "tool_approval_resolved", toolCallId, approved: false, outcome: "expired" },
      },
    ],
    effects: [{ type: "approval_decided", toolCallId }],
  };
}
