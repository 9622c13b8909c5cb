// The approval gate of each tool call, on the shell's side: the pure `decideApprovalGate` says run,
// refuse or wait; a wait appends the request (unless logged), arms the expiry timer from the log,
// and resolves on the decision the log receives (`approval_decided` effect) or the expiry.
import type { ApprovalLayer } from "@fleet/protocol";
import { APPROVAL_TEXT, decideApprovalGate, type GateStep } from "../decide/approval-gate.js";
import { decideInput } from "../decide/decide-input.js";
import type { BeforeToolCallResult } from "../engine/index.js";
import { decideContextOf } from "./decide-context.js";
import { runEffect } from "./effects.js";
import { appendDraft, type SessionShell } from "./session-shell.js";

/**
 * The approval gate of each call (`decideApprovalGate`): the rules in force (the session's, the
 * tenant's, the worker default's, first match wins) let it run, refuse it, or make it wait for a
 * decision read from the log: a decision already logged (a resumed run) is used at once, a request
 * already logged is not made again, and one with `expiresAt` expires by a timer armed from the
 * log (`decideApprovalExpiry`), so a new owner arms it again after a crash.
 */
export async function approvalGate(
  shell: SessionShell,
  toolCallId: string,
  toolName: string,
  args: unknown,
  signal: AbortSignal | undefined,
): Promise<BeforeToolCallResult | undefined> {
  const state = shell.state;
  const deps = shell.deps;
  const tenant = deps.tenantApprovalRules?.rules() ?? [];
  // The common case (no rule anywhere, no request logged) allocates nothing.
  if (
    state.approvalRules.length === 0 &&
    state.agentApprovalRules.length === 0 &&
    tenant.length === 0 &&
    !deps.settings.approvalTools.has(toolName) &&
    !state.approvals.has(toolCallId)
  )
    return undefined;
  const layers: ApprovalLayer[] = [
    { scope: "session", rules: state.approvalRules },
    { scope: "agent_version", rules: state.agentApprovalRules },
    { scope: "tenant", rules: tenant },
    shell.workerApprovals,
  ];
  const first = decideApprovalGate(state, { toolCallId, toolName, args }, layers, deps.now(), deps.newId);
  const step =
    first.kind === "request" || first.kind === "wait" ? await awaitApproval(shell, first, toolCallId, signal) : first;
  if (step.kind === "refuse") return { block: true, reason: step.reason };
  if (step.kind === "run" && step.args !== undefined) return { args: step.args };
  return undefined;
}

/** Waits at the gate: appends the request (unless logged), arms its expiry, resolves on a decision. */
async function awaitApproval(
  shell: SessionShell,
  step: Extract<GateStep, { kind: "request" | "wait" }>,
  toolCallId: string,
  signal: AbortSignal | undefined,
): Promise<GateStep> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    return await new Promise<GateStep>((resolve) => {
      shell.approvalWaiters.set(toolCallId, resolve);
      onAbort = () => resolve({ kind: "refuse", reason: APPROVAL_TEXT.aborted });
      if (signal?.aborted) return onAbort();
      signal?.addEventListener("abort", onAbort, { once: true });
      const expiresAt = step.expiresAt;
      // A timer may fire before the clock reads `expiresAt` (libuv counts from the event loop's
      // cached time, which lags under load): then it is armed again for what is left, since an
      // expiry decided early decides nothing and nothing else would arm it again.
      const fire = () => {
        const left = (expiresAt ?? 0) - shell.deps.now();
        if (left > 0) timer = setTimeout(fire, left);
        else void expireApproval(shell, toolCallId);
      };
      const arm = () => {
        if (expiresAt === undefined) return;
        timer = setTimeout(fire, Math.max(0, expiresAt - shell.deps.now()));
      };
      if (step.kind === "wait") return arm();
      void shell.coalescer
        .drain()
        .then(() => appendDraft(shell, step.request, shell.engine.state.runId))
        .then(arm)
        .catch(() => resolve({ kind: "refuse", reason: APPROVAL_TEXT.unrecorded }));
    });
  } finally {
    clearTimeout(timer);
    if (onAbort) signal?.removeEventListener("abort", onAbort);
    shell.approvalWaiters.delete(toolCallId);
  }
}

/**
 * The expiry timer of a waiting request fired: decided and appended between two of the engine's
 * deliveries, like a command, so a decision that came first wins and the log holds exactly one.
 */
async function expireApproval(shell: SessionShell, toolCallId: string): Promise<void> {
  if (shell.detached || shell.dead) return;
  try {
    const engine = shell.engine;
    const decision = await engine.exclusive(async () => {
      const timer = { kind: "timer", timer: "approval_expiry", toolCallId } as const;
      const d = decideInput(shell.state, shell.sessionId, timer, decideContextOf(shell));
      if (d.kind === "decided") for (const draft of d.events) await appendDraft(shell, draft, engine.state.runId);
      return d;
    });
    if (decision.kind === "decided") for (const effect of decision.effects) await runEffect(shell, effect);
  } catch (err) {
    if (!shell.detached) shell.log.warn({ err, toolCallId }, "approval expiry could not be recorded");
  }
}
