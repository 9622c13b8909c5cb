// The session's engine, wired to the shell: its hooks (pi's conversion, plugins, remote hooks, the
// approval gate, named hook servers), its LLM port (budget guard, trace context, payload hook,
// time to first delta), its tool port, its emit port and the automatic compaction's summary port.
import { type AssistantStreamEvent, convertToLlm, runCursorOf, streamingMessageOf } from "@fleet/protocol";
import { guardBudget } from "../budget-guard.js";
import { decideInput } from "../decide/decide-input.js";
import { createSessionEngine, type EndedTurn, type SessionEngine } from "../engine/index.js";
import { type HookSessionPort, withHookServers, withPayloadHook } from "../hook-servers.js";
import { composeHooks } from "../hooks.js";
import type { DraftEvent } from "../session-core/drafts.js";
import { flushDrafts } from "../session-core/session-write.js";
import type { ToolResultInput } from "../session-core/tool-result.js";
import { turnEndBody } from "../session-core/turn-boundary.js";
import { summarizeForCompaction } from "../summarizer.js";
import { timeToFirstDelta } from "../time-to-first-delta.js";
import { approvalGate } from "./approval-waits.js";
import { decideContextOf } from "./decide-context.js";
import { modelInfoOf, providerStreamFn, toolDefinitions, traced } from "./llm-ports.js";
import { emitEngineEvent } from "./run-driver.js";
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
      decideToolResult: (input) => decideRunToolResult(shell, input),
      decideProviderChunk: (chunk) => decideRunProviderEnd(shell, chunk),
      decideTurnEnd: (turn) => decideRunTurnEnd(shell, turn),
      decideTurnBoundary: (stop) => decideRunTurnBoundary(shell, stop),
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

/**
 * A live run's tool result, decided by the runtime core on the session's fold (`decideInput`), as
 * any other input. Deciding nothing means the fold and the engine's batch disagree: logged, and the
 * engine's own step is emitted instead.
 */
function decideRunToolResult(shell: SessionShell, input: ToolResultInput): readonly DraftEvent[] | undefined {
  const decision = decideInput(shell.state, shell.sessionId, input, decideContextOf(shell));
  if (decision.kind === "decided" && decision.events.length > 0) return decision.events;
  shell.log.warn(
    { evt: "tool_result_undecided", toolCallId: input.toolCallId, cursor: runCursorOf(shell.state).kind },
    "the fold decided nothing for a tool result: the engine's batch step is used",
  );
  return undefined;
}

/**
 * A live turn's end, decided by the runtime core on the session's fold (`decideInput {turn_end}`):
 * `turn_end`, the writes flushed at it, and `agent_end` when the fold ends the run there. Deciding
 * nothing means the fold and the engine disagree on where the run stands: logged, and the engine's
 * own `turn_end` is emitted with the writes flushed after it (the engine's boundary goes on).
 */
function decideRunTurnEnd(shell: SessionShell, turn: EndedTurn): readonly DraftEvent[] {
  const ctx = decideContextOf(shell);
  const decision = decideInput(shell.state, shell.sessionId, TURN_END, ctx);
  if (decision.kind === "decided" && decision.events.length > 0) return decision.events;
  shell.log.warn(
    { evt: "turn_end_undecided", cursor: runCursorOf(shell.state).kind },
    "the fold decided nothing for a turn's end: the engine's turn_end is used",
  );
  const state = shell.state;
  return [
    { id: ctx.newId(), body: turnEndBody(turn.message, turn.toolResults) },
    ...flushDrafts(state.pendingWrites, streamingMessageOf(state), ctx.newId),
  ];
}

const TURN_END = { kind: "turn_end" } as const;

/**
 * The chunk that ends a live LLM call, decided by the runtime core on the session's fold
 * (`decideInput {provider_chunk}`): the message's end. Deciding nothing is logged, and the engine
 * ends the message itself.
 */
function decideRunProviderEnd(shell: SessionShell, chunk: AssistantStreamEvent): readonly DraftEvent[] | undefined {
  const input = { kind: "provider_chunk", chunk } as const;
  const decision = decideInput(shell.state, shell.sessionId, input, decideContextOf(shell));
  if (decision.kind === "decided" && decision.events.length > 0) return decision.events;
  shell.log.warn(
    { evt: "provider_chunk_undecided", chunk: chunk.type, cursor: runCursorOf(shell.state).kind },
    "the fold decided nothing for the chunk that ends an LLM call: the engine ends the message",
  );
  return undefined;
}

/**
 * Where a live run goes past a turn's boundary, decided by the runtime core on the session's fold
 * (`decideInput {turn_boundary, stop}`): the queue polls, then the next turn's start or the run's
 * end. Deciding nothing is logged, and the engine polls and goes on itself.
 */
function decideRunTurnBoundary(shell: SessionShell, stop: boolean): readonly DraftEvent[] | undefined {
  const input = stop ? STOPPED : GOING_ON;
  const decision = decideInput(shell.state, shell.sessionId, input, decideContextOf(shell));
  if (decision.kind === "decided" && decision.events.length > 0) return decision.events;
  shell.log.warn(
    { evt: "turn_boundary_undecided", cursor: runCursorOf(shell.state).kind },
    "the fold decided nothing at a turn boundary: the engine polls its queues",
  );
  return undefined;
}

const STOPPED = { kind: "turn_boundary", stop: true } as const;
const GOING_ON = { kind: "turn_boundary", stop: false } as const;
