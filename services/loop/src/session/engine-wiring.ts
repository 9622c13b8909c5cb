// The session's engine, wired to the shell: its hooks (pi's conversion, plugins, remote hooks, the
// approval gate, named hook servers), its LLM port (budget guard, trace context, payload hook,
// time to first delta), its tool port, its emit port, the automatic compaction's summary port, and
// the ports that send a run's inputs through the runtime core (`./run-inputs.ts`).
import { convertToLlm } from "@fleet/protocol";
import { guardBudget } from "../budget-guard.js";
import { createSessionEngine, type SessionEngine } from "../engine/index.js";
import { type HookSessionPort, withHookServers, withPayloadHook } from "../hook-servers.js";
import { composeHooks } from "../hooks.js";
import { summarizeForCompaction } from "../summarizer.js";
import { timeToFirstDelta } from "../time-to-first-delta.js";
import { approvalGate } from "./approval-waits.js";
import { modelInfoOf, providerStreamFn, toolDefinitions, traced } from "./llm-ports.js";
import { emitEngineEvent } from "./run-driver.js";
import { runInputPorts } from "./run-inputs.js";
import { appendDraft, type SessionShell } from "./session-shell.js";
import { executeTool } from "./tool-calls.js";

export function createShellEngine(shell: SessionShell): SessionEngine {
  const deps = shell.deps;
  const local = composeHooks([
    // pi coding-agent's conversion (summaries and custom messages become user text); plugins may replace it.
    { convertToLlm },
    ...deps.pluginHooks,
    deps.remoteHooks.forSession(shell.sessionId),
    { beforeToolCall: (c, signal) => approvalGate(shell, c.toolCall.id, c.toolCall.name, c.args, signal) },
  ]);
  const servers = deps.hookServers;
  const port = servers ? hookSessionPort(shell) : undefined;
  const hooks = servers && port ? withHookServers(local, servers, port) : local;
  const llm = (provider: string) => {
    const inner = providerStreamFn(shell, provider);
    return servers && port ? withPayloadHook(inner, servers, port, deps.now) : inner;
  };
  const modelInfo = modelInfoOf.bind(undefined, shell);
  return createSessionEngine({
    sessionId: shell.sessionId,
    session: shell.state,
    tools: toolDefinitions(shell),
    hooks,
    autoCompaction: { contextWindow: (model) => modelInfo(model).contextWindow, summarize: summarizeForCompaction },
    ports: {
      now: deps.now,
      newId: deps.newId,
      emit: (event) => emitEngineEvent(shell, event),
      ...runInputPorts(shell),
      streamFn: guardBudget(
        (context, options, signal) =>
          timeToFirstDelta(llm(options.model.provider)(context, traced(shell, options), signal), deps.now, (ms) =>
            deps.metrics.timeToFirstToken.observe(ms / 1000),
          ),
        shell.budget.guard,
        deps.now,
        (model) => modelInfo(model).price,
      ),
      executeTool: (call, signal, onUpdate) => executeTool(shell, call, signal, onUpdate),
    },
  });
}

/** What the named hook servers read and write of this session: its fold, `hook_decision` appends, blobs. */
function hookSessionPort(shell: SessionShell): HookSessionPort {
  return {
    sessionId: shell.sessionId,
    fold: () => shell.state,
    record: async (body) => {
      await shell.coalescer.drain();
      await appendDraft(shell, { id: shell.deps.newId(), body }, shell.state.status.runId);
    },
    blobs: shell.deps.blobs,
  };
}
