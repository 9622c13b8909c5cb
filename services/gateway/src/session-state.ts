// `GET /v1/sessions/{id}`: a session's folded state and its context, as JSON (pure).
import type { SessionView } from "@fleet/client";
import {
  AgentMessage,
  buildContext,
  ContextMessage,
  ModelRef,
  QueueMode,
  SessionAgent,
  SessionBudget,
  SessionConfig,
  type SessionSpend,
  Spend,
  ThinkingLevel,
  ToolExecutionMode,
} from "@fleet/protocol";
import { z } from "zod";

export const SessionState = z.object({
  sessionId: z.string(),
  /** Stream sequence of the last event folded. */
  seq: z.number().int().nonnegative(),
  /** `running` from `agent_start` until `agent_end`. */
  status: z.enum(["idle", "running"]),
  name: z.string().nullable(),
  config: SessionConfig.nullable(),
  forkedFrom: z.object({ sessionId: z.string(), entryId: z.string() }).nullable(),
  /** The agent version the session runs (change 54); null: none. */
  agent: SessionAgent.nullable(),
  model: ModelRef.nullable(),
  thinkingLevel: ThinkingLevel,
  systemPrompt: z.string(),
  activeTools: z.array(z.string()).nullable(),
  steeringMode: QueueMode,
  followUpMode: QueueMode,
  toolExecution: ToolExecutionMode,
  runId: z.string().nullable(),
  queues: z.object({
    steer: z.array(AgentMessage),
    followUp: z.array(AgentMessage),
    nextTurn: z.array(AgentMessage),
  }),
  /** The message being streamed (rebuilt from its deltas), if any. */
  streamingMessage: AgentMessage.nullable(),
  pendingToolCalls: z.array(z.string()),
  errorMessage: z.string().nullable(),
  /** pi's transcript (`Agent.state.messages`). */
  messages: z.array(ContextMessage),
  leafId: z.string().nullable(),
  /** What LLM calls spent (PROTOCOL change 23): in the session's life and in its last run, and the budget in force. */
  spend: z.object({ session: Spend, run: Spend, budget: SessionBudget }),
  /** What the model would be sent at the leaf: the built context. */
  context: z.object({
    messages: z.array(ContextMessage),
    model: ModelRef.nullable(),
    thinkingLevel: ThinkingLevel,
    activeToolNames: z.array(z.string()).nullable(),
  }),
});
export type SessionState = z.infer<typeof SessionState>;

/**
 * The JSON of a folded view and its spend. A client that folds the same events (SSE,
 * `foldSessionViewEvents` and `foldSessionSpend`) and calls this gets the same value as the route.
 */
export function sessionStateOf(sessionId: string, view: SessionView, spend: SessionSpend): SessionState {
  const { agent, tree } = view;
  const built = buildContext(tree);
  const context = built.ok
    ? {
        messages: built.messages,
        model: built.model,
        thinkingLevel: built.thinkingLevel,
        activeToolNames: built.activeToolNames,
      }
    : { messages: [], model: agent.model, thinkingLevel: agent.thinkingLevel, activeToolNames: null };
  return {
    sessionId,
    seq: view.seq,
    status: agent.isStreaming ? "running" : "idle",
    name: tree.name,
    config: tree.config,
    forkedFrom: tree.forkedFrom,
    agent: tree.agent ?? null,
    model: agent.model,
    thinkingLevel: agent.thinkingLevel,
    systemPrompt: agent.systemPrompt,
    activeTools: agent.activeTools === null ? null : [...agent.activeTools],
    steeringMode: agent.steeringMode,
    followUpMode: agent.followUpMode,
    toolExecution: agent.toolExecution,
    runId: agent.runId ?? null,
    queues: {
      steer: [...agent.queues.steer],
      followUp: [...agent.queues.followUp],
      nextTurn: [...agent.queues.nextTurn],
    },
    streamingMessage: agent.streamingMessage ?? null,
    pendingToolCalls: [...agent.pendingToolCalls],
    errorMessage: agent.errorMessage ?? null,
    messages: [...agent.messages],
    leafId: tree.leafId,
    spend: { session: spend.session, run: spend.run, budget: spend.budget },
    context,
  };
}
