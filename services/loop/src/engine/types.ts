// Public types of the loop engine: ports, tools, hooks, events. Everything the engine touches
// outside its own memory goes through one of these ports.
import type {
  AgentMessage,
  AssistantMessage,
  AssistantStreamEvent,
  CompactionPlan,
  ContextMessage,
  EventBody,
  EventId,
  ImageContent,
  LlmMessage,
  ModelRef,
  TextContent,
  ThinkingLevel,
  ToolCallContent,
  ToolExecutionMode,
  ToolResultMessage,
} from "@fleet/protocol";
import type { SummaryResult } from "../session-core/compaction.js";
import type { DraftEvent } from "../session-core/drafts.js";
import type { ToolExecutionOutcome, ToolResultInput } from "../session-core/tool-result.js";

/** A call's outcome (shared with the pure core). */
export type { ToolExecutionOutcome };

import type { AutoCompaction } from "./auto-compaction.js";

/** A model as the engine sees it. `api` (pi's `model.api`) only labels messages the engine synthesises. */
export interface EngineModel extends ModelRef {
  api?: string;
}

/** A tool as registered (KV `fleet_tools`): what the LLM sees plus the per-tool execution mode. */
export interface ToolDefinition {
  name: string;
  description: string;
  /** JSON Schema of the arguments object. Validators are compiled once per schema object. */
  parameters: Record<string, unknown>;
  /** `sequential` forces the whole batch that contains a call to this tool to run one call at a time. */
  executionMode?: ToolExecutionMode;
}

/** The request context handed to `streamFn` (pi-ai's `Context`). */
export interface LlmContext {
  systemPrompt: string;
  messages: LlmMessage[];
  tools: readonly ToolDefinition[];
}

export interface StreamOptions {
  model: EngineModel;
  thinkingLevel: ThinkingLevel;
  maxTokens?: number;
  sessionId?: string;
  /** W3C trace context of this call's `chat` span (change 46); a provider sends it as HTTP headers. */
  traceparent?: string;
  tracestate?: string;
}

/**
 * The LLM port. Contract (pi's): never throws and never rejects; failures arrive as a terminal
 * `error` event with reason `error` or `aborted`. If it throws anyway, the run takes pi's failure
 * path (an error assistant message, `turn_end`, `agent_end`).
 * The engine stops reading as soon as `signal` aborts and finishes the message itself.
 */
export type StreamFn = (
  context: LlmContext,
  options: StreamOptions,
  signal: AbortSignal | undefined,
) => AsyncIterable<AssistantStreamEvent>;

/**
 * The compaction summary port (`summarizeForCompaction` of `../summarizer.ts` in production): pi's
 * summary requests for `plan`, sent through `streamFn`. Contract: never rejects; a failed summary
 * is `{ok: false, error}`.
 */
export type SummarizeCompaction = (request: {
  streamFn: StreamFn;
  model: ModelRef;
  thinkingLevel: ThinkingLevel;
  plan: CompactionPlan;
  instructions?: string | undefined;
  reserveTokens?: number;
  signal?: AbortSignal;
  now: () => number;
}) => Promise<SummaryResult>;

/** A call the engine asks the tool port to run: raw arguments already validated (and coerced). */
export interface ToolCallRequest {
  toolCallId: string;
  toolName: string;
  args: unknown;
}

/** What a tool returns. `isError: true` (from a remote runner) is honoured; a throw becomes an error result. */
export interface ToolOutput {
  content: (TextContent | ImageContent)[];
  details?: unknown;
  terminate?: boolean;
  isError?: boolean;
}

/**
 * The tool port. Rejections become error results with the thrown message verbatim.
 * `onUpdate(partialResult)` emits `tool_execution_update`; updates after the call settled are dropped.
 */
export type ExecuteTool = (
  call: ToolCallRequest,
  signal: AbortSignal | undefined,
  onUpdate: (partialResult: unknown) => void,
) => Promise<ToolOutput>;

/** A Fleet event body (wire event without `meta`), without `entry`: what the loop produces. */
export type LoopEventBody = DistributiveOmit<EventBody, "entry">;
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/**
 * What the engine hands to `emit`: the event body with `entry` filled in, the event id the engine
 * minted (use it as `meta.id`; entry events have `entry.id === id`), and the run id for every event
 * from `agent_start` through `agent_end` of a run (use it as `meta.runId`). Every event and its body
 * are new objects that the engine keeps no reference to: the port may keep or change them.
 */
export interface EngineEvent {
  id: EventId;
  runId: string | undefined;
  body: EventBody;
}

/**
 * The event port. Awaited once per event, strictly in order, never concurrently (as pi awaits its
 * listeners). Contract: it throws only when the event could not be made durable; the engine then
 * emits nothing more, aborts the run's signal, and the run settles with `status: "emit_failed"`.
 */
export type Emit = (event: EngineEvent) => Promise<void> | void;

export interface EnginePorts {
  streamFn: StreamFn;
  executeTool: ExecuteTool;
  emit: Emit;
  /** Milliseconds since the epoch, for message timestamps. */
  now: () => number;
  /** A fresh event or run id (UUIDv7 / ULID in production). */
  newId: () => string;
  /**
   * Decides a call's outcome on the session's fold (the shell's `decideInput {tool_result}`),
   * asked in the delivery order: once every event emitted before it was accepted, so folded. Its
   * events are emitted as decided. Undefined when it decides nothing: the engine then emits what
   * its own batch says (the same step, `stepToolResult`). Absent: always the engine's own.
   */
  decideToolResult?: (input: ToolResultInput) => readonly DraftEvent[] | undefined;
  /**
   * Decides each provider chunk of an LLM call on the session's fold (the shell's `decideInput
   * {provider_chunk}`), asked in the delivery order: `start` → `message_start`, a delta →
   * `message_update` (asked and emitted at once when nothing is queued, so no promise per delta),
   * the ending chunk (`done`, `error`, or the `error` chunk the engine makes for an abort or a
   * stream that ended early) → the message's `message_end`, its `message_start` first when the
   * stream never started. Undefined when it decides nothing: the engine emits its own step (the
   * same mapping, `stepProviderChunk`, on the partial it keeps for an abort).
   */
  decideProviderChunk?: (chunk: AssistantStreamEvent) => readonly DraftEvent[] | undefined;
  /**
   * Decides a live turn's end on the session's fold (the shell's `decideInput {turn_end}`), asked
   * in the delivery order once the turn's results were accepted: `turn_end`, the pending writes
   * flushed at it, and `agent_end` when the fold ends the run there (a terminal message, an
   * accepted abort). `turn` is the engine's own view of the turn, for a fold that decides nothing
   * (the port then returns `turn_end` of it and the writes flushed). Absent: the engine emits its
   * own `turn_end`.
   */
  decideTurnEnd?: (turn: EndedTurn) => readonly DraftEvent[];
  /**
   * Decides where a live run goes past a turn's boundary on the session's fold (the shell's
   * `decideInput {turn_boundary, stop}`), asked in the delivery order once pi 0.75's turn hooks
   * answered (`stop`: `shouldStopAfterTurn`'s; false at a boundary that asks none): the queue
   * polls by the session's modes, then the next turn's `turn_start`, the drain's `queue_update`
   * and the taken messages; or the pending writes flushed and `agent_end`. Undefined when it
   * decides nothing: the engine polls and goes on itself. Not asked once the run's own signal
   * aborted (the engine ends the run).
   */
  decideTurnBoundary?: (stop: boolean) => readonly DraftEvent[] | undefined;
}

/** A turn whose LLM call and tool calls are done, as the engine's run has it. */
export interface EndedTurn {
  message: AssistantMessage;
  toolResults: ToolResultMessage[];
}

/** The working context of a run (pi's `AgentContext`). */
export interface LoopContext {
  systemPrompt: string;
  messages: ContextMessage[];
  tools: readonly ToolDefinition[];
}

export interface BeforeToolCallContext {
  assistantMessage: AssistantMessage;
  toolCall: ToolCallContent;
  /** Validated and coerced arguments; mutating them changes what runs (no re-validation). */
  args: unknown;
  context: LoopContext;
}
export interface BeforeToolCallResult {
  block?: boolean;
  reason?: string;
  /**
   * Fleet addition (an approval with edited arguments): the call runs with these arguments instead,
   * validated against the tool's schema first (invalid ones give the validation error result).
   */
  args?: unknown;
}
export interface AfterToolCallContext extends BeforeToolCallContext {
  result: ToolExecutionOutcome["result"];
  isError: boolean;
}
/** Field-wise replacement of the executed result: a present field replaces the whole field (no deep merge). */
export interface AfterToolCallResult {
  content?: (TextContent | ImageContent)[];
  details?: unknown;
  isError?: boolean;
  terminate?: boolean;
}
export interface TurnContext {
  message: AssistantMessage;
  toolResults: ToolResultMessage[];
  context: LoopContext;
  /** Messages that `agent_end` would carry if the run ended now. */
  newMessages: AgentMessage[];
}
/** pi 0.75 `prepareNextTurn` result: replaces the context, model or thinking level for the rest of the run. */
export interface NextTurnUpdate {
  context?: LoopContext;
  model?: EngineModel;
  thinkingLevel?: ThinkingLevel;
}

/**
 * pi's `AgentLoopConfig` hooks. All optional, all may be async. Contract differs from pi only in
 * that throwing is safe: tool hooks that throw give an error tool result; any other hook that
 * throws ends the run through pi 0.75's failure path.
 */
export interface EngineHooks {
  /** Runs before `convertToLlm` on every LLM call; its result is used for that one request only. */
  transformContext?: (messages: ContextMessage[], signal: AbortSignal | undefined) => Promise<ContextMessage[]>;
  /** Default: keep user, assistant and toolResult messages (pi agent-core). */
  convertToLlm?: (messages: ContextMessage[]) => LlmMessage[] | Promise<LlmMessage[]>;
  beforeToolCall?: (
    context: BeforeToolCallContext,
    signal: AbortSignal | undefined,
  ) => BeforeToolCallResult | undefined | Promise<BeforeToolCallResult | undefined>;
  afterToolCall?: (
    context: AfterToolCallContext,
    signal: AbortSignal | undefined,
  ) => AfterToolCallResult | undefined | Promise<AfterToolCallResult | undefined>;
  /** After every non-error `turn_end` and after `prepareNextTurn`; `true` ends the run without polling the queues. */
  shouldStopAfterTurn?: (context: TurnContext) => boolean | Promise<boolean>;
  /** After every non-error `turn_end` (also the last one), before `shouldStopAfterTurn`. */
  prepareNextTurn?: (context: TurnContext) => NextTurnUpdate | undefined | Promise<NextTurnUpdate | undefined>;
}

/** Configuration of one run of the stateless loop (pi's `AgentLoopConfig`). */
export interface LoopConfig extends EngineHooks {
  model: EngineModel;
  thinkingLevel: ThinkingLevel;
  /** Default `parallel`. */
  toolExecution?: ToolExecutionMode;
  /** Named in the error result of tool calls cut by a `length` stop. */
  maxTokens?: number;
  sessionId?: string;
  /** Polled at run start and after each completed turn. */
  getSteeringMessages?: () => AgentMessage[] | Promise<AgentMessage[]>;
  /** Polled only when the run would otherwise end. */
  getFollowUpMessages?: () => AgentMessage[] | Promise<AgentMessage[]>;
  /**
   * Called right before the first `message_start` of messages the loop injects (the prompt's
   * messages, or polled steering / follow-up messages). The shell announces queue drains here, so
   * a drain's `queue_update` comes just before the injected message.
   */
  beforeInject?: (messages: readonly AgentMessage[]) => Promise<void> | undefined;
  /** pi coding-agent's automatic compaction around LLM calls (the session engine's); none when absent. */
  autoCompaction?: AutoCompaction;
}
