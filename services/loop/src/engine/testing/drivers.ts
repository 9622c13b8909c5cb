// Drives pi's Agent (0.73.1, faux provider) and Fleet's SessionEngine (scripted provider) through the
// same scenario, and reduces both event streams to the same comparable shape.

import type { AgentMessage, AssistantMessage, SessionConfig, ToolResultMessage } from "@fleet/protocol";
import { Agent, type AgentEvent, type AgentTool } from "@mariozechner/pi-agent-core";
import {
  createAssistantMessageEventStream,
  fauxAssistantMessage,
  type Model,
  type AssistantMessage as PiAssistantMessage,
  registerFauxProvider,
} from "@mariozechner/pi-ai";
import { ScriptTurn, type ScriptTurnInput } from "../script.js";
import { createScriptedProvider, type ScriptedProvider, type Sleep } from "../scripted-provider.js";
import { applyStreamDelta } from "../stream-assistant.js";
import type { EngineHooks, LlmContext, StreamFn, ToolDefinition, ToolOutput } from "../types.js";
import { T0, testEngine } from "./harness.js";

/** A tool both sides run: the same function behind pi's `execute` and Fleet's `executeTool`. */
export interface ScenarioTool {
  def: ToolDefinition;
  run: (
    args: unknown,
    signal: AbortSignal | undefined,
    onUpdate: (p: unknown) => void,
    id: string,
  ) => Promise<ToolOutput>;
}

export interface ScenarioOptions {
  steps: ScriptTurnInput[];
  tools?: ScenarioTool[];
  messages?: AgentMessage[];
  config?: Partial<Pick<SessionConfig, "steeringMode" | "followUpMode" | "toolExecution">>;
  beforeToolCall?: EngineHooks["beforeToolCall"];
  /** Stream through the scripted provider on both sides (pi through an adapter), with this rate. */
  scriptedOnBothSides?: { tokensPerSecond: number; chunkChars: number; sleep: Sleep };
}

/** Fleet's LLM port for a scenario: it serves `steps` in order, streamed at `scripted`'s rate when given. */
export type ScenarioLlm = (
  steps: readonly ScriptTurnInput[],
  scripted?: ScenarioOptions["scriptedOnBothSides"],
) => StreamFn;

/** What a scenario's script does with either side. */
export interface Driver {
  readonly side: "pi" | "fleet";
  prompt(text: string): Promise<void>;
  continue(): Promise<void>;
  steer(text: string): Promise<void>;
  followUp(text: string): Promise<void>;
  abort(): void;
  /** Called for every event, awaited (a listener). */
  onEvent(listener: (e: ComparableEvent) => void | Promise<void>): void;
  /** The comparable trace so far. */
  trace(): string[];
  messages(): unknown[];
}

/** The fields both sides' agent events share (pi's `AgentEvent` and Fleet's event bodies). */
export interface ComparableEvent {
  type: string;
  message?: AgentMessage;
  toolCallId?: string;
  isError?: boolean;
  toolResults?: ToolResultMessage[];
  messages?: AgentMessage[];
  /** Delta type of a message_update. */
  delta?: string;
}

export const userText = (text: string): AgentMessage => ({
  role: "user",
  content: [{ type: "text", text }],
  timestamp: T0,
});

export function describeEvent(e: ComparableEvent): string | undefined {
  switch (e.type) {
    case "message_start":
    case "message_end": {
      const m = e.message as AgentMessage;
      if (m.role === "assistant") return `${e.type}:assistant${e.type === "message_end" ? `(${m.stopReason})` : ""}`;
      if (m.role === "toolResult") return `${e.type}:toolResult(${m.toolCallId}${m.isError ? ",err" : ""})`;
      if (m.role === "user") {
        const text =
          typeof m.content === "string" ? m.content : m.content.map((b) => (b.type === "text" ? b.text : "")).join("");
        return `${e.type}:user(${text})`;
      }
      return `${e.type}:${m.role}`;
    }
    case "message_update":
      return `message_update:${e.delta}`;
    case "tool_execution_start":
    case "tool_execution_update":
      return `${e.type}:${e.toolCallId}`;
    case "tool_execution_end":
      return `tool_execution_end:${e.toolCallId}${e.isError ? "(err)" : ""}`;
    case "turn_end":
      return `turn_end[${(e.toolResults ?? []).map((r) => r.toolCallId).join(",")}]`;
    case "agent_end":
      return `agent_end(${(e.messages ?? []).map((m) => m.role).join(",")})`;
    case "agent_start":
    case "turn_start":
      return e.type;
    default:
      return undefined; // Fleet-only events (queue_update, session writes) have no pi counterpart
  }
}

/** Final messages with run-dependent fields removed: timestamps and usage (faux estimates its own). */
export function normalizeMessages(messages: readonly unknown[]): unknown[] {
  return (JSON.parse(JSON.stringify(messages)) as Record<string, unknown>[]).map(
    ({ timestamp: _t, usage: _u, ...rest }) => rest,
  );
}

function toFaux(step: ScriptTurnInput): PiAssistantMessage {
  const turn = ScriptTurn.parse(step);
  const content =
    turn.text === undefined ? turn.content : [...turn.content, { type: "text" as const, text: turn.text }];
  const stopReason =
    turn.stopReason ??
    (turn.error !== undefined ? "error" : content.some((b) => b.type === "toolCall") ? "toolUse" : "stop");
  const errorMessage = turn.errorMessage ?? turn.error;
  return fauxAssistantMessage(content as PiAssistantMessage["content"], {
    stopReason,
    ...(errorMessage ? { errorMessage } : {}),
    timestamp: T0,
  });
}

/** pi's side: a stream function over Fleet's scripted provider (the same bytes on both sides). */
function piStreamOver(fn: StreamFn, model: Model<string>) {
  return (
    _model: Model<string>,
    context: { systemPrompt?: string; messages: unknown[]; tools?: unknown[] },
    options?: { signal?: AbortSignal },
  ) => {
    const stream = createAssistantMessageEventStream();
    void (async () => {
      let partial: AssistantMessage | undefined;
      const llm = {
        systemPrompt: context.systemPrompt ?? "",
        messages: context.messages,
        tools: [],
      } as unknown as LlmContext;
      for await (const event of fn(
        llm,
        { model: { provider: model.provider, modelId: model.id }, thinkingLevel: "off" },
        options?.signal,
      )) {
        if (event.type === "start") {
          partial = event.partial;
          stream.push({ type: "start", partial: event.partial as PiAssistantMessage });
        } else if (event.type === "done") {
          stream.push({ type: "done", reason: event.reason, message: event.message as PiAssistantMessage });
          stream.end(event.message as PiAssistantMessage);
        } else if (event.type === "error") {
          stream.push({ type: "error", reason: event.reason, error: event.error as PiAssistantMessage });
          stream.end(event.error as PiAssistantMessage);
        } else if (partial) {
          partial = applyStreamDelta(partial, event);
          stream.push({ ...event, partial } as never);
        }
      }
    })();
    return stream;
  };
}

export function piDriver(options: ScenarioOptions): Driver & { dispose(): void } {
  const faux = registerFauxProvider({
    api: "scripted",
    provider: "scripted",
    models: [{ id: "scripted-1" }],
    tokenSize: { min: 1e9, max: 1e9 },
  });
  faux.setResponses(options.steps.map(toFaux));
  const model = faux.getModel();
  const tools: AgentTool[] = (options.tools ?? []).map((t) => ({
    name: t.def.name,
    label: t.def.name,
    description: t.def.description,
    parameters: t.def.parameters as never,
    ...(t.def.executionMode ? { executionMode: t.def.executionMode } : {}),
    execute: (id, params, signal, onUpdate) => t.run(params, signal, (p) => onUpdate?.(p as never), id) as never,
  }));
  const scripted = options.scriptedOnBothSides;
  const agent = new Agent({
    initialState: {
      systemPrompt: "You are a test.",
      model,
      thinkingLevel: "off",
      tools,
      messages: (options.messages ?? []) as never,
    },
    ...(options.config?.steeringMode ? { steeringMode: options.config.steeringMode } : {}),
    ...(options.config?.followUpMode ? { followUpMode: options.config.followUpMode } : {}),
    ...(options.config?.toolExecution ? { toolExecution: options.config.toolExecution } : {}),
    ...(options.beforeToolCall ? { beforeToolCall: async (c, s) => options.beforeToolCall?.(c as never, s) } : {}),
    ...(scripted
      ? {
          streamFn: piStreamOver(
            createScriptedProvider({ steps: options.steps, now: () => T0, ...scripted }).streamFn,
            model,
          ) as never,
        }
      : {}),
  });
  const trace: string[] = [];
  agent.subscribe(async (event: AgentEvent) => {
    const e = comparablePi(event);
    const line = describeEvent(e);
    if (line) trace.push(line);
    for (const l of listeners) await l(e);
  });
  const listeners: ((e: ComparableEvent) => void | Promise<void>)[] = [];
  return {
    side: "pi",
    prompt: (text) => agent.prompt(text),
    continue: () => agent.continue(),
    steer: async (text) => agent.steer(userText(text) as never),
    followUp: async (text) => agent.followUp(userText(text) as never),
    abort: () => agent.abort(),
    onEvent: (l) => void listeners.push(l),
    trace: () => trace,
    messages: () => agent.state.messages,
    dispose: () => faux.unregister(),
  };
}

function comparablePi(event: AgentEvent): ComparableEvent {
  switch (event.type) {
    case "message_update":
      return { type: event.type, delta: event.assistantMessageEvent.type };
    case "message_start":
    case "message_end":
      return { type: event.type, message: event.message as AgentMessage };
    case "tool_execution_start":
    case "tool_execution_update":
      return { type: event.type, toolCallId: event.toolCallId };
    case "tool_execution_end":
      return { type: event.type, toolCallId: event.toolCallId, isError: event.isError };
    case "turn_end":
      return { type: event.type, toolResults: event.toolResults as ToolResultMessage[] };
    case "agent_end":
      return { type: event.type, messages: event.messages as AgentMessage[] };
    default:
      return { type: event.type };
  }
}

/**
 * Fleet's side. `llm`, when given, makes the LLM port serving the scenario's steps (e.g. through a
 * real provider against a fake server) in place of the scripted provider.
 */
export function fleetDriver(options: ScenarioOptions, llm?: ScenarioLlm): Driver & { provider: ScriptedProvider } {
  const listeners: ((e: ComparableEvent) => void | Promise<void>)[] = [];
  const trace: string[] = [];
  const scripted = options.scriptedOnBothSides;
  const t = testEngine({
    ...(llm ? { streamFn: llm(options.steps, scripted) } : {}),
    steps: options.steps,
    tools: (options.tools ?? []).map((x) => x.def),
    handlers: Object.fromEntries((options.tools ?? []).map((x) => [x.def.name, (a, s, u, id) => x.run(a, s, u, id)])),
    init: { messages: options.messages ?? [] },
    config: options.config ?? {},
    ...(options.beforeToolCall ? { hooks: { beforeToolCall: options.beforeToolCall } } : {}),
    ...(scripted ? scripted : {}),
  });
  t.rec.listen(async (event) => {
    const body = event.body as ComparableEvent & { deltas?: { type: string }[] };
    const e: ComparableEvent =
      body.type === "message_update" ? { type: body.type, delta: body.deltas?.[0]?.type } : body;
    const line = describeEvent(e);
    if (line) trace.push(line);
    for (const l of listeners) await l(e);
  });
  const settle = async (run: Promise<unknown>) => {
    const result = (await run) as { status: string; reason?: string };
    if (result.status === "rejected") throw new Error(result.reason);
  };
  return {
    side: "fleet",
    provider: t.provider,
    prompt: (text) => settle(t.engine.prompt(text)),
    continue: () => settle(t.engine.continue()),
    steer: (text) => t.engine.steer(userText(text)),
    followUp: (text) => t.engine.followUp(userText(text)),
    abort: () => t.engine.abort(),
    onEvent: (l) => void listeners.push(l),
    trace: () => trace,
    messages: () => t.engine.state.messages.slice(),
  };
}
