// Invariant 9: sub-agents (issue 29). For every `agent` call of a parent's log, read beside its
// child's log: the child was created and prompted once and ran at most one run; a call that ended
// normally carries the child's final text and the child's spend; an aborted parent's call closed its
// child per its policy and the child ran nothing after; no child is left with an open run.
import {
  AGENT_TOOL_NAME,
  type ChildClosePolicy,
  ChildResultDetails,
  childCommandIds,
  childSessionId,
  emptySpend,
  type FleetEvent,
  finalAssistantText,
  foldSessionSpend,
  initialSessionSpend,
  type Spend,
  spendOfEvent,
  toolErrorText,
} from "@fleet/protocol";
import { openRuns } from "./check-liveness.js";
import type { SessionLog, Violation } from "./types.js";

/** How the calls of the logs checked ended, for the report. */
export interface SubAgentSummary {
  calls: number;
  /** Calls whose child's answer was the tool result. */
  answered: number;
  /** Calls ended `Operation aborted` by their parent's abort, and of those, children created. */
  aborted: number;
  abortedChildren: number;
  /** Children whose log holds a `run_resumed` (their run was taken over by a new owner). */
  childrenResumed: number;
  /** Calls that ended with a clear start failure (`Sub-agent could not be started: …`) and no child run. */
  startFailed: number;
  /** Tokens aborted children spent, which their parent's total does not hold (see PROTOCOL "Sub-agents"). */
  abortedChildTokens: number;
}

export const emptySubAgentSummary = (): SubAgentSummary => ({
  calls: 0,
  answered: 0,
  aborted: 0,
  abortedChildren: 0,
  childrenResumed: 0,
  startFailed: 0,
  abortedChildTokens: 0,
});

/** The child sessions a parent's log names: one per `agent` tool call of its assistant messages. */
export function agentCallsOf(log: SessionLog): { toolCallId: string; childId: string; started: boolean }[] {
  const started = new Set<string>();
  for (const e of log.events)
    if (e.type === "tool_execution_start" && e.toolName === AGENT_TOOL_NAME) started.add(e.toolCallId);
  const calls = new Map<string, { toolCallId: string; childId: string; started: boolean }>();
  for (const e of log.events) {
    if (e.type !== "message_end" || e.message.role !== "assistant") continue;
    for (const block of e.message.content) {
      if (block.type !== "toolCall" || block.name !== AGENT_TOOL_NAME || calls.has(block.id)) continue;
      calls.set(block.id, {
        toolCallId: block.id,
        childId: childSessionId(log.sessionId, block.id),
        started: started.has(block.id),
      });
    }
  }
  return [...calls.values()];
}

/** What a log's events spent, as its fold counts it: `session` (all) and `own` (its LLM calls only). */
function spendOf(events: readonly FleetEvent[]): { session: Spend; run: Spend; own: Spend } {
  const spend = initialSessionSpend();
  const own = emptySpend();
  for (const e of events) {
    foldSessionSpend(spend, e);
    const used = spendOfEvent(e);
    if (used) {
      own.inputTokens += used.inputTokens;
      own.outputTokens += used.outputTokens;
      own.totalTokens += used.totalTokens;
      own.costUsd += used.costUsd;
    }
  }
  return { session: spend.session, run: spend.run, own };
}

/** How a call whose child's commands could not be published ends (the sub-agent port's wording). */
const START_FAILED = "Sub-agent could not be started";

const sameSpend = (a: Spend, b: Spend) => a.totalTokens === b.totalTokens && Math.abs(a.costUsd - b.costUsd) < 1e-9;
const textOf = (content: readonly { type: string; text?: string }[]) =>
  content.map((c) => (c.type === "text" ? (c.text ?? "") : "")).join("");

/**
 * Checks one parent and the logs of the children its calls name (`children`, by child id; a child
 * never created has an empty log). `summary` is added to.
 */
export function checkSubAgents(
  parent: SessionLog,
  children: ReadonlyMap<string, SessionLog>,
  summary: SubAgentSummary,
): Violation[] {
  const out: Violation[] = [];
  const v = (kind: string, detail: string, sessionId = parent.sessionId) =>
    out.push({ invariant: "subAgents", sessionId, kind, detail });
  const ends = new Map<string, Extract<FleetEvent, { type: "tool_execution_end" }>>();
  for (const e of parent.events) if (e.type === "tool_execution_end") ends.set(e.toolCallId, e);
  let childrenSpend = emptySpend();

  for (const call of agentCallsOf(parent)) {
    const child = children.get(call.childId);
    const events = child?.events ?? [];
    const created = events.filter((e) => e.type === "session_created");
    const what = `agent call ${call.toolCallId} (child ${call.childId})`;
    const ids = childCommandIds(call.childId);
    const runs = new Set(events.flatMap((e) => (e.type === "agent_start" && e.meta.runId ? [e.meta.runId] : [])));
    if (!call.started) {
      // Never started (the run ended before its tool calls ran): no child may exist.
      if (created.length > 0) v("child_without_call", `${what} never started, yet its child was created`);
      continue;
    }
    summary.calls++;
    // The child's own record, whether or not its parent's call ended.
    if (created.length > 0) {
      if (events.some((e) => e.type === "run_resumed")) summary.childrenResumed++;
      if (created.length > 1) v("child_created_twice", `${what}: ${created.length} session_created`, call.childId);
      const link = created[0]?.type === "session_created" ? created[0].parent : undefined;
      if (link?.sessionId !== parent.sessionId || link.toolCallId !== call.toolCallId)
        v("child_link", `${what}: session_created.parent is ${JSON.stringify(link)}`, call.childId);
      const prompted = events.filter((e) => e.type === "command_accepted" && e.commandId === ids.prompt).length;
      if (prompted > 1) v("child_prompted_twice", `${what}: prompt accepted ${prompted} times`, call.childId);
      if (runs.size > 1) v("child_started_twice", `${what}: ${runs.size} runs`, call.childId);
      for (const runId of openRuns({ ...parent, sessionId: call.childId, events }))
        v("child_stuck", `${what}: run ${runId} never ended`, call.childId);
    }
    const end = ends.get(call.toolCallId);
    if (!end) {
      // The log-shape and liveness checks report the parent's unended call; say where its child stands.
      const last = events.at(-1);
      v("call_unended", `${what} never ended; its child's last event: ${last ? last.type : "none (no log)"}`);
      continue;
    }
    const endText = textOf(end.result.content);
    const aborted = end.isError && endText === toolErrorText.aborted;
    if (aborted) summary.aborted++;
    // A clear error: the child's commands could not be published (storage full, say).
    const startFailed = end.isError && endText.startsWith(START_FAILED);
    if (created.length === 0) {
      if (startFailed) summary.startFailed++;
      else if (!aborted) v("child_missing", `${what} ended (${end.isError ? endText : "ok"}) but its child has no log`);
      continue;
    }
    const link = created[0]?.type === "session_created" ? created[0].parent : undefined;

    const childSpend = spendOf(events);
    if (aborted) {
      summary.abortedChildren++;
      summary.abortedChildTokens += childSpend.session.totalTokens;
      out.push(...checkClosed(call.childId, what, events, link?.closePolicy ?? "terminate"));
      continue;
    }
    if (runs.size === 0) {
      if (startFailed) summary.startFailed++;
      else v("child_not_started", `${what} ended (${end.isError ? endText : "ok"}) but its child never ran`);
      continue;
    }
    const childEnd = events.findLast((e) => e.type === "agent_end");
    const answer = childEnd?.type === "agent_end" ? finalAssistantText(childEnd.messages) : undefined;
    if (end.isError) {
      // The child's own run ended without an answer (its stream cut by a takeover, say): the call's
      // result is that error, as a runner's failed call is. Any other error is a violation.
      const ownError =
        childEnd !== undefined &&
        answer === undefined &&
        endText.startsWith(`Sub-agent ${call.childId} ended without an answer`);
      if (!ownError) {
        v("child_result_error", `${what} ended with an error though its parent was not aborted: ${endText}`);
        continue;
      }
    } else if (answer === undefined || endText !== answer) {
      v(
        "child_result_mismatch",
        `${what}: result ${JSON.stringify(endText)}, child's answer ${JSON.stringify(answer)}`,
      );
      continue;
    } else summary.answered++;
    const details = ChildResultDetails.safeParse(end.result.details);
    const reported = details.success ? details.data.spend : undefined;
    if (!reported || !sameSpend(reported, childSpend.run))
      v(
        "child_spend",
        `${what}: result's spend ${reported?.totalTokens ?? "none"} tokens, the child's run spent ${childSpend.run.totalTokens}`,
      );
    childrenSpend = {
      ...childrenSpend,
      totalTokens: childrenSpend.totalTokens + childSpend.run.totalTokens,
      costUsd: childrenSpend.costUsd + childSpend.run.costUsd,
    };
  }
  // The parent's total: its own calls plus what its answered children spent.
  const mine = spendOf(parent.events);
  const expected = mine.own.totalTokens + childrenSpend.totalTokens;
  if (mine.session.totalTokens !== expected)
    v(
      "parent_spend",
      `session spend ${mine.session.totalTokens} tokens, own ${mine.own.totalTokens} + children ${childrenSpend.totalTokens}`,
    );
  return out;
}

/**
 * An aborted parent's child: under `terminate` its `abort` was accepted, under `request_cancel` its
 * steer; either way no run started after that. `abandon` asks nothing.
 */
function checkClosed(
  childId: string,
  what: string,
  events: readonly FleetEvent[],
  policy: ChildClosePolicy,
): Violation[] {
  if (policy === "abandon") return [];
  const ids = childCommandIds(childId);
  const id = policy === "terminate" ? ids.abort : ids.cancel;
  const at = events.findIndex((e) => e.type === "command_accepted" && e.commandId === id);
  if (at < 0)
    return [
      { invariant: "subAgents", sessionId: childId, kind: "child_not_closed", detail: `${what}: no accepted ${id}` },
    ];
  const later = events.slice(at + 1).find((e) => e.type === "agent_start");
  return later
    ? [
        {
          invariant: "subAgents",
          sessionId: childId,
          kind: "child_ran_after_close",
          detail: `${what}: run ${later.meta.runId} started after ${policy}`,
        },
      ]
    : [];
}
