// Test fixtures for the engine: fixed clock and ids, an event recorder, compact traces.
import {
  type AgentMessage,
  type ContextMessage,
  evolveSession,
  type FleetEvent,
  initialSessionState,
  type MessageQueues,
  type SessionConfig,
  type SessionState,
  sessionConfigWith,
} from "@fleet/protocol";
import { summarizeForCompaction } from "../../summarizer.js";
import { createInProcessExecutor, type ToolHandler } from "../in-process-tools.js";
import { createScriptedProvider, type ScriptedProvider, type ScriptStep, type Sleep } from "../scripted-provider.js";
import { SessionEngine, type SessionEngineOptions } from "../session-engine.js";
import type { Emit, EngineEvent, EnginePorts, StreamFn, ToolDefinition } from "../types.js";

export const T0 = 1_000;

/** Ids `e1`, `e2`, … in minting order. */
export function sequentialIds(prefix = "e"): () => string {
  let n = 0;
  return () => `${prefix}${++n}`;
}

export interface Recorder {
  events: EngineEvent[];
  emit: (event: EngineEvent) => Promise<void>;
  /** Called for each event before it is recorded (may be async: a slow listener). */
  listen: (listener: (event: EngineEvent) => void | Promise<void>) => void;
}

export function recorder(): Recorder {
  const events: EngineEvent[] = [];
  const listeners: ((event: EngineEvent) => void | Promise<void>)[] = [];
  return {
    events,
    emit: async (event) => {
      events.push(event);
      for (const listener of listeners) await listener(event);
    },
    listen: (listener) => {
      listeners.push(listener);
    },
  };
}

const role = (m: AgentMessage) =>
  m.role === "user"
    ? `user(${typeof m.content === "string" ? m.content : m.content.map((b) => (b.type === "text" ? b.text : "img")).join("")})`
    : m.role;

/**
 * One short string per event: `message_end:assistant(stop)`, `tool_execution_end:t1(err)`,
 * `turn_end[t1,t2]`, `agent_end(5)`, `queue_update(s1,f0,n0)`, `model_change(p/m)`…
 */
export function trace(events: readonly EngineEvent[], options: { updates?: boolean } = {}): string[] {
  const out: string[] = [];
  for (const { body } of events) {
    switch (body.type) {
      case "message_start":
      case "message_end": {
        const m = body.message;
        if (m.role === "assistant")
          out.push(`${body.type}:assistant(${body.type === "message_end" ? m.stopReason : "…"})`);
        else if (m.role === "toolResult")
          out.push(`${body.type}:toolResult(${m.toolCallId}${m.isError ? ",err" : ""})`);
        else if (m.role === "custom") out.push(`${body.type}:custom(${m.customType})`);
        else out.push(`${body.type}:${role(m)}`);
        break;
      }
      case "message_update":
        if (options.updates) out.push(`message_update:${body.deltas.map((d) => d.type).join(",")}`);
        break;
      case "tool_execution_start":
      case "tool_execution_update":
        out.push(`${body.type}:${body.toolCallId}`);
        break;
      case "tool_execution_end":
        out.push(`tool_execution_end:${body.toolCallId}${body.isError ? "(err)" : ""}`);
        break;
      case "turn_end":
        out.push(`turn_end[${body.toolResults.map((r) => r.toolCallId).join(",")}]`);
        break;
      case "agent_end":
        out.push(`agent_end(${body.messages.length})`);
        break;
      case "queue_update":
        out.push(`queue_update(s${body.steer.length},f${body.followUp.length},n${body.nextTurn.length})`);
        break;
      case "model_change":
        out.push(`model_change(${body.provider}/${body.modelId})`);
        break;
      case "thinking_level_change":
        out.push(`thinking_level_change(${body.thinkingLevel})`);
        break;
      case "active_tools_change":
        out.push(`active_tools_change(${body.toolNames.join(",")})`);
        break;
      case "label":
        out.push(`label(${body.targetId}=${body.label})`);
        break;
      case "session_info":
        out.push(`session_info(${body.name})`);
        break;
      case "custom":
        out.push(`custom(${body.customType})`);
        break;
      case "run_resumed":
        out.push(`run_resumed(${body.reason})`);
        break;
      case "pending_write":
        out.push(`pending_write(${body.write.type})`);
        break;
      default:
        out.push(body.type);
    }
  }
  return out;
}

/** The text of a tool_execution_end / toolResult error, by toolCallId. */
export function resultText(events: readonly EngineEvent[], toolCallId: string): string | undefined {
  for (const { body } of events) {
    if (body.type === "tool_execution_end" && body.toolCallId === toolCallId) {
      const block = body.result.content[0];
      return block?.type === "text" ? block.text : undefined;
    }
  }
  return undefined;
}

export const user = (text: string, timestamp = T0): AgentMessage => ({
  role: "user",
  content: [{ type: "text", text }],
  timestamp,
});

export const objectSchema = (properties: Record<string, unknown>, required: string[] = []) => ({
  type: "object",
  properties,
  required,
});

export const echoTool: ToolDefinition = {
  name: "echo",
  description: "Echoes its text",
  parameters: objectSchema({ text: { type: "string" } }, ["text"]),
};

export const defaultConfig = (patch: Partial<SessionConfig> = {}): SessionConfig =>
  sessionConfigWith({
    model: { provider: "scripted", modelId: "scripted-1" },
    systemPrompt: "You are a test.",
    ...patch,
  });

/** A promise with its resolve function. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve: (value: T) => void = () => {};
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** A sleep port driven by the test: `tick()` releases every sleeper. */
export function manualSleep(): { sleep: Sleep; waiting: () => number; tick: () => Promise<void> } {
  let sleepers: (() => void)[] = [];
  return {
    sleep: (_ms, signal) =>
      new Promise<void>((resolve) => {
        sleepers.push(resolve);
        signal?.addEventListener("abort", () => resolve(), { once: true });
      }),
    waiting: () => sleepers.length,
    tick: async () => {
      const now = sleepers;
      sleepers = [];
      for (const wake of now) wake();
      await flush();
    },
  };
}

/** Lets every queued promise callback run (tests only: a macrotask turn). */
export async function flush(rounds = 3): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Where a test session starts (the fold is built from it without recording events). */
export interface SessionInit {
  /** The context: becomes a chain of message entries (`init-1`, … or `leafId` for the last). */
  messages?: readonly ContextMessage[];
  /** The leaf: the last message's entry id, or an id the tree does not hold (a leaf with no context). */
  leafId?: string | null;
  config?: SessionConfig;
  queues?: MessageQueues;
}

export const TEST_SESSION_ID = "s-test";

/** Wire meta of an engine event (what the service's appender stamps). */
export function toFleetEvent(event: EngineEvent): FleetEvent {
  return {
    ...event.body,
    meta: {
      v: 1,
      id: event.id,
      sessionId: TEST_SESSION_ID,
      ts: T0,
      ...(event.runId ? { runId: event.runId } : {}),
      producer: "test",
    },
  } as FleetEvent;
}

/** A session's fold at `init`, as the shell would hold it after loading such a log. */
export function sessionAt(init: SessionInit, config: SessionConfig = defaultConfig()): SessionState {
  const state = initialSessionState();
  const stamp = (id: string) => ({ v: 1 as const, id, sessionId: TEST_SESSION_ID, ts: T0, producer: "test" });
  evolveSession(state, { type: "session_created", config: init.config ?? config, meta: stamp("init-0") });
  const messages = init.messages ?? [];
  let parentId: string | null = null;
  messages.forEach((message, i) => {
    const id = i === messages.length - 1 && init.leafId ? init.leafId : `init-${i + 1}`;
    evolveSession(state, {
      type: "message_end",
      message: message as AgentMessage,
      entry: { id, parentId },
      meta: stamp(id),
    });
    parentId = id;
  });
  if (init.leafId !== undefined && messages.length === 0) state.tree.leafId = init.leafId;
  if (init.queues) evolveSession(state, { type: "queue_update", ...init.queues, meta: stamp("init-q") } as FleetEvent);
  return state;
}

export interface TestEngine {
  engine: SessionEngine;
  rec: Recorder;
  provider: ScriptedProvider;
  ports: EnginePorts;
  /** The session's fold, updated from every recorded event (as the service's shell does). */
  session: SessionState;
}

export function testEngine(options: {
  steps?: ScriptStep[];
  tools?: ToolDefinition[];
  /** Handlers, or a function of the recorder (to wait for emitted events). */
  handlers?: Record<string, ToolHandler> | ((rec: Recorder) => Record<string, ToolHandler>);
  init?: SessionInit;
  config?: Partial<SessionConfig>;
  hooks?: SessionEngineOptions["hooks"];
  sleep?: Sleep;
  tokensPerSecond?: number;
  chunkChars?: number;
  maxTokens?: number;
  /** The model's context window: given, the engine compacts automatically (`AutoCompaction`). */
  contextWindow?: number;
  /** The session's fold to run on (default: one built from `init`). */
  session?: SessionState;
  /** Wraps the recorder's emit (e.g. to make the port fail). */
  wrapEmit?: (emit: Emit) => Emit;
  /** The LLM port instead of the scripted provider (which is then only built, not called). */
  streamFn?: StreamFn;
}): TestEngine {
  const rec = recorder();
  const session = options.session ?? sessionAt(options.init ?? {}, defaultConfig(options.config));
  const folding: Emit = (event) => {
    evolveSession(session, toFleetEvent(event));
    return rec.emit(event);
  };
  const provider = createScriptedProvider({
    steps: options.steps ?? [],
    now: () => T0,
    ...(options.sleep ? { sleep: options.sleep } : {}),
    ...(options.tokensPerSecond !== undefined ? { tokensPerSecond: options.tokensPerSecond } : {}),
    ...(options.chunkChars !== undefined ? { chunkChars: options.chunkChars } : {}),
  });
  const ports: EnginePorts = {
    streamFn: options.streamFn ?? provider.streamFn,
    executeTool: createInProcessExecutor(
      typeof options.handlers === "function" ? options.handlers(rec) : (options.handlers ?? {}),
    ),
    emit: options.wrapEmit ? options.wrapEmit(folding) : folding,
    now: () => T0,
    newId: sequentialIds(),
  };
  const engine = new SessionEngine({
    ports,
    session,
    tools: options.tools ?? [],
    ...(options.hooks ? { hooks: options.hooks } : {}),
    ...(options.maxTokens !== undefined ? { maxTokens: options.maxTokens } : {}),
    ...(options.contextWindow !== undefined
      ? { autoCompaction: { contextWindow: () => options.contextWindow as number, summarize: summarizeForCompaction } }
      : {}),
  });
  return { engine, rec, provider, ports, session };
}
