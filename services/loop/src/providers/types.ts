import type { AssistantStreamEvent, LlmMessage, ModelRef, ThinkingLevel } from "@fleet/protocol";
import type { StreamFn as EngineStreamFn } from "../engine/types.js";

/** A tool as the LLM sees it. `parameters` is the registered JSON Schema (an object schema). */
export interface LlmTool {
  readonly name: string;
  readonly description: string;
  readonly parameters: Readonly<Record<string, unknown>>;
}

/**
 * What one LLM call sees: the system prompt, the conversation (already converted to the three LLM roles)
 * and the active tools. Providers apply pi-ai's replay rules themselves (errored/aborted assistant
 * messages dropped, "No result provided" results for orphaned tool calls), so callers pass the log as is.
 */
export interface LlmContext {
  readonly systemPrompt: string;
  readonly messages: readonly LlmMessage[];
  readonly tools: readonly LlmTool[];
}

/** Per-call options. `maxTokens` defaults to the model's max output tokens (see `models.ts`). */
export interface StreamOptions {
  readonly model: ModelRef;
  readonly thinkingLevel: ThinkingLevel;
  readonly maxTokens?: number;
  readonly sessionId?: string;
  /** W3C trace context of this call's `chat` span (change 46), sent as the request's headers. */
  readonly traceparent?: string;
  readonly tracestate?: string;
}

/**
 * The engine's LLM port. Contract:
 * - it never throws and the iterable never rejects; every failure is an `error` event;
 * - events: optional `start` first, then deltas, then exactly one terminal event (`done` or `error`), last;
 * - `error.reason` is `aborted` when `signal` fired (errorMessage exactly "Request was aborted", partial
 *   content kept), otherwise `error` with the provider's text in `errorMessage`;
 * - every message it yields (`start.partial`, `done.message`, `error.error`) is a fresh object;
 * - without a signal the call cannot be aborted.
 */
export type StreamFn = (
  context: LlmContext,
  options: StreamOptions,
  signal?: AbortSignal,
) => AsyncIterable<AssistantStreamEvent>;

/** Compile-time check: a provider `StreamFn` plugs into the engine's LLM port (`engine/types.ts`). */
type FitsEnginePort<T extends EngineStreamFn> = T;
export type ProviderStreamFnFitsEngine = FitsEnginePort<StreamFn>;
