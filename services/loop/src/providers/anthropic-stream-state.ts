import type { Anthropic } from "@anthropic-ai/sdk";
import {
  type AssistantMessage,
  type AssistantStreamEvent,
  emptyUsage,
  type StreamDelta,
  type TextContent,
  type ThinkingContent,
  type ToolCallContent,
} from "@fleet/protocol";
import { mapStopReason } from "./map-stop-reason.js";
import { computeCost, type ModelPrice } from "./models.js";
import { ANTHROPIC_API } from "./prepare-replay-messages.js";

/** Text shown for a redacted thinking block (pi-ai); the opaque payload is in `thinkingSignature`. */
export const REDACTED_THINKING_TEXT = "[Reasoning redacted]";

type Terminal = Extract<AssistantStreamEvent, { type: "done" | "error" }>;

/**
 * Folds Anthropic raw stream events into a pi assistant message and the deltas to publish. Pure: no I/O,
 * no clock (the timestamp comes in). Every message it hands out is a deep copy.
 *
 * Rules:
 * - content blocks are numbered in arrival order (`contentIndex`), skipping block kinds Fleet does not
 *   request (server tools, …), whose deltas are ignored as well;
 * - text → text_start / text_delta / text_end{content}; thinking → thinking_start / thinking_delta /
 *   thinking_end{content, thinkingSignature} (signature_delta only extends the signature); redacted_thinking
 *   → a thinking block `{thinking: "[Reasoning redacted]", thinkingSignature: data, redacted: true}`;
 * - tool_use → toolcall_start{id, name}, one toolcall_delta per input_json_delta carrying the raw
 *   `partial_json`, toolcall_end{toolCall} with the concatenation parsed (an empty or unparseable input, e.g.
 *   cut by max_tokens, gives `{}`; a non-streamed `input` is used when no delta came);
 * - usage: message_start sets all four counters; message_delta overrides each counter it reports non-null;
 *   `totalTokens` = input + output + cacheRead + cacheWrite; cost from the model's price, recomputed each time;
 * - `finish()` after the stream ended: without `message_stop` → error; else the stop_reason mapping
 *   (see `map-stop-reason.ts`).
 */
export interface AnthropicStreamState {
  apply(event: Anthropic.RawMessageStreamEvent): StreamDelta[];
  /** A copy of the message so far (for `start`). */
  snapshot(): AssistantMessage;
  /** The terminal event once the raw stream ended without an exception. */
  finish(): Terminal;
  /** The terminal event for a failure; the content so far is kept. */
  fail(reason: "error" | "aborted", errorMessage: string): Terminal;
}

export interface AnthropicStreamStateInit {
  readonly provider: string;
  readonly model: string;
  readonly price: ModelPrice;
  readonly timestamp: number;
}

type OpenBlock =
  | { readonly kind: "text"; readonly contentIndex: number; readonly block: TextContent }
  | { readonly kind: "thinking"; readonly contentIndex: number; readonly block: ThinkingContent }
  | {
      readonly kind: "toolCall";
      readonly contentIndex: number;
      readonly block: ToolCallContent;
      json: string;
      readonly initialInput: Record<string, unknown>;
    };

export function createAnthropicStreamState(init: AnthropicStreamStateInit): AnthropicStreamState {
  const message: AssistantMessage = {
    role: "assistant",
    content: [],
    api: ANTHROPIC_API,
    provider: init.provider,
    model: init.model,
    usage: emptyUsage(),
    stopReason: "stop",
    timestamp: init.timestamp,
  };
  const open = new Map<number, OpenBlock>();
  let stopReason: string | null | undefined;
  let sawMessageStop = false;

  const setUsage = (counters: {
    input_tokens?: number | null;
    output_tokens?: number | null;
    cache_read_input_tokens?: number | null;
    cache_creation_input_tokens?: number | null;
  }) => {
    const usage = message.usage;
    if (counters.input_tokens != null) usage.input = counters.input_tokens;
    if (counters.output_tokens != null) usage.output = counters.output_tokens;
    if (counters.cache_read_input_tokens != null) usage.cacheRead = counters.cache_read_input_tokens;
    if (counters.cache_creation_input_tokens != null) usage.cacheWrite = counters.cache_creation_input_tokens;
    usage.totalTokens = usage.input + usage.output + usage.cacheRead + usage.cacheWrite;
    usage.cost = computeCost(init.price, usage);
  };

  const startBlock = (event: Anthropic.RawContentBlockStartEvent): StreamDelta[] => {
    const source = event.content_block;
    const contentIndex = message.content.length;
    switch (source.type) {
      case "text": {
        const block: TextContent = { type: "text", text: source.text };
        message.content.push(block);
        open.set(event.index, { kind: "text", contentIndex, block });
        const start: StreamDelta = { type: "text_start", contentIndex };
        return source.text === "" ? [start] : [start, { type: "text_delta", contentIndex, delta: source.text }];
      }
      case "thinking": {
        const block: ThinkingContent = { type: "thinking", thinking: source.thinking };
        if (source.signature) block.thinkingSignature = source.signature;
        message.content.push(block);
        open.set(event.index, { kind: "thinking", contentIndex, block });
        const start: StreamDelta = { type: "thinking_start", contentIndex };
        return source.thinking === ""
          ? [start]
          : [start, { type: "thinking_delta", contentIndex, delta: source.thinking }];
      }
      case "redacted_thinking": {
        const block: ThinkingContent = {
          type: "thinking",
          thinking: REDACTED_THINKING_TEXT,
          thinkingSignature: source.data,
          redacted: true,
        };
        message.content.push(block);
        open.set(event.index, { kind: "thinking", contentIndex, block });
        return [{ type: "thinking_start", contentIndex }];
      }
      case "tool_use": {
        const block: ToolCallContent = { type: "toolCall", id: source.id, name: source.name, arguments: {} };
        message.content.push(block);
        open.set(event.index, {
          kind: "toolCall",
          contentIndex,
          block,
          json: "",
          initialInput: asRecord(source.input),
        });
        return [{ type: "toolcall_start", contentIndex, id: source.id, name: source.name }];
      }
      default:
        return [];
    }
  };

  const applyDelta = (event: Anthropic.RawContentBlockDeltaEvent): StreamDelta[] => {
    const target = open.get(event.index);
    if (!target) return [];
    const delta = event.delta;
    const { contentIndex } = target;
    if (delta.type === "text_delta" && target.kind === "text") {
      target.block.text += delta.text;
      return [{ type: "text_delta", contentIndex, delta: delta.text }];
    }
    if (delta.type === "thinking_delta" && target.kind === "thinking") {
      target.block.thinking += delta.thinking;
      return [{ type: "thinking_delta", contentIndex, delta: delta.thinking }];
    }
    if (delta.type === "signature_delta" && target.kind === "thinking") {
      target.block.thinkingSignature = (target.block.thinkingSignature ?? "") + delta.signature;
      return [];
    }
    if (delta.type === "input_json_delta" && target.kind === "toolCall") {
      target.json += delta.partial_json;
      return [{ type: "toolcall_delta", contentIndex, delta: delta.partial_json }];
    }
    return [];
  };

  const stopBlock = (event: Anthropic.RawContentBlockStopEvent): StreamDelta[] => {
    const target = open.get(event.index);
    if (!target) return [];
    open.delete(event.index);
    const { contentIndex } = target;
    switch (target.kind) {
      case "text":
        return [{ type: "text_end", contentIndex, content: target.block.text }];
      case "thinking": {
        const signature = target.block.thinkingSignature;
        return [
          {
            type: "thinking_end",
            contentIndex,
            content: target.block.thinking,
            ...(signature ? { thinkingSignature: signature } : {}),
          },
        ];
      }
      case "toolCall":
        target.block.arguments = target.json.trim() === "" ? target.initialInput : parseArguments(target.json);
        return [{ type: "toolcall_end", contentIndex, toolCall: structuredClone(target.block) }];
    }
  };

  const terminal = (reason: "error" | "aborted", errorMessage: string): Terminal => {
    message.stopReason = reason;
    message.errorMessage = errorMessage;
    return { type: "error", reason, error: structuredClone(message) };
  };

  return {
    apply(event) {
      switch (event.type) {
        case "message_start":
          message.responseId = event.message.id;
          setUsage(event.message.usage);
          return [];
        case "content_block_start":
          return startBlock(event);
        case "content_block_delta":
          return applyDelta(event);
        case "content_block_stop":
          return stopBlock(event);
        case "message_delta":
          if (event.delta.stop_reason != null) stopReason = event.delta.stop_reason;
          setUsage(event.usage);
          return [];
        case "message_stop":
          sawMessageStop = true;
          return [];
        default:
          return [];
      }
    },
    snapshot: () => structuredClone(message),
    finish() {
      if (!sawMessageStop) return terminal("error", "Anthropic stream ended before message_stop");
      const mapped = mapStopReason(stopReason);
      if (!mapped.ok) return terminal("error", mapped.errorMessage);
      message.stopReason = mapped.reason;
      return { type: "done", reason: mapped.reason, message: structuredClone(message) };
    },
    fail: terminal,
  };
}

function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? { ...(value as Record<string, unknown>) }
    : {};
}

function parseArguments(json: string): Record<string, unknown> {
  try {
    return asRecord(JSON.parse(json));
  } catch {
    return {};
  }
}
