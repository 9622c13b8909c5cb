// The engine's tool port: a call runs on the tool runners (or, for `agent`, as a child session),
// unless the log already holds its result. The run's abort cancels it; a detach (lease lost,
// eviction, shutdown) only stops waiting: the call goes on, and its result is the next owner's.
import { AGENT_TOOL_NAME } from "@fleet/protocol";
import { decideChildCall } from "../decide/decide-child.js";
import type { ToolCallRequest, ToolOutput } from "../engine/index.js";
import { recordedToolResult } from "../replay-driver.js";
import { agentCallOrdinal, agentCallsInBatch } from "../sub-agents/agent-call-ordinal.js";
import { childBudget } from "../sub-agents/child-budget.js";
import type { SubAgentPort } from "../sub-agents/sub-agent-port.js";
import { toolTrace } from "./llm-ports.js";
import type { SessionShell } from "./session-shell.js";

type OnUpdate = (partial: unknown) => void;

/** Runs a call on the tool runners, or its recorded result (a replay), or a child session. */
export async function executeTool(
  shell: SessionShell,
  call: ToolCallRequest,
  signal: AbortSignal | undefined,
  onUpdate: OnUpdate,
): Promise<ToolOutput> {
  const deps = shell.deps;
  const recorded = recordedToolResult(shell.state, call);
  if (recorded) return recorded;
  if (call.toolName === AGENT_TOOL_NAME && deps.subAgents)
    return executeChildCall(shell, call, signal, onUpdate, deps.subAgents);
  const started = deps.now();
  const result = await cancellable(shell, signal, (cancel) =>
    deps.dispatcher.execute(
      {
        sessionId: shell.sessionId,
        runId: shell.engine.state.runId ?? "",
        toolCallId: call.toolCallId,
        toolName: call.toolName,
        args: call.args,
        timeoutMs: deps.registry.get(call.toolName)?.timeoutMs ?? deps.settings.toolTimeoutMs,
        fresh: shell.freshToolCalls.delete(call.toolCallId),
        ...toolTrace(shell, call.toolCallId),
      },
      cancel,
      onUpdate,
      shell.detachedSignal.signal,
    ),
  );
  deps.metrics.toolLatency.observe({ tool: call.toolName }, (deps.now() - started) / 1000);
  return result;
}

/**
 * Runs a call with a signal the run's abort aborts, unless the shell was detached meanwhile (a
 * detach only stops waiting: the call is the next owner's). Throws when detached.
 */
async function cancellable<T>(
  shell: SessionShell,
  signal: AbortSignal | undefined,
  run: (cancel: AbortSignal) => Promise<T>,
): Promise<T> {
  const cancel = new AbortController();
  const onAbort = () => {
    if (!shell.detached) cancel.abort();
  };
  signal?.addEventListener("abort", onAbort, { once: true });
  if (signal?.aborted) onAbort();
  try {
    const result = await run(cancel.signal);
    if (shell.detached) throw new Error("actor detached");
    return result;
  } finally {
    signal?.removeEventListener("abort", onAbort);
  }
}

/**
 * An `agent` call (change 57): decided from the fold (`decideChildCall`: a refusal is its error
 * result), then its child started and awaited. The child's id derives from the call, so a new owner
 * resuming the run awaits the same child, and finds its stored answer.
 */
async function executeChildCall(
  shell: SessionShell,
  call: ToolCallRequest,
  signal: AbortSignal | undefined,
  onUpdate: OnUpdate,
  port: SubAgentPort,
): Promise<ToolOutput> {
  const decision = decideChildCall({
    parentSessionId: shell.sessionId,
    parentLink: shell.state.parent,
    runId: shell.engine.state.runId ?? "",
    toolCallId: call.toolCallId,
    args: call.args,
    ordinal: agentCallOrdinal(shell.state.tree.entries, call.toolCallId),
    limits: port.settings,
  });
  if (decision.kind === "refuse") return { content: [{ type: "text" as const, text: decision.text }], isError: true };
  const fresh = shell.freshToolCalls.delete(call.toolCallId);
  // The child's share of what the parent's budgets have left (split over the batch's children).
  const siblings = Math.min(agentCallsInBatch(shell.state.tree.entries, call.toolCallId), port.settings.maxFanOut);
  const budget = childBudget(shell.state.spend, siblings);
  return cancellable(shell, signal, (cancel) =>
    port.run(shell.sessionId, call.toolCallId, decision, cancel, onUpdate, shell.detachedSignal.signal, fresh, budget),
  );
}
