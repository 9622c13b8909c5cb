// Turns a scripted reply into Anthropic SSE events or a Message JSON (pure).

import type { FakeBlock, FakeMessageReply, FakeStopReason, MessagesRequestBody } from "./fake-anthropic-types.js";

/** Maximum characters per default delta. */
export const DEFAULT_CHUNK_CHARS = 8;

/** One server-sent event: written as `event: <event>\ndata: <JSON of data>\n\n`. */
export interface SseEvent {
  readonly event: string;
  readonly data: unknown;
}

/** Per-request inputs the reply does not carry. */
export interface ReplyContext {
  /** 0-based request index; used for default ids. */
  readonly index: number;
  readonly body: MessagesRequestBody;
}

/** The final token counts of a reply (defaults: tokens ≈ characters / 4, cache counters 0). */
export interface ResolvedUsage {
  readonly input_tokens: number;
  readonly output_tokens: number;
  readonly cache_read_input_tokens: number;
  readonly cache_creation_input_tokens: number;
}

/**
 * The full SSE event sequence of a reply, in write order: message_start, ping, per block
 * content_block_start / content_block_delta… / content_block_stop, message_delta, message_stop.
 * `errorAfterEvents` and `stallAfterEvents` are applied by the server, not here.
 * Throws when a block's `deltas` do not concatenate to its full value (a mistake in the test script).
 */
export function buildSseEvents(reply: FakeMessageReply, ctx: ReplyContext): SseEvent[] {
  const usage = resolveUsage(reply, ctx);
  const events: SseEvent[] = [
    {
      event: "message_start",
      data: {
        type: "message_start",
        message: {
          ...messageEnvelope(reply, ctx),
          content: [],
          stop_reason: null,
          stop_sequence: null,
          stop_details: null,
          usage: fullUsage({ ...usage, output_tokens: 1 }),
        },
      },
    },
    { event: "ping", data: { type: "ping" } },
  ];
  reply.content.forEach((block, index) => {
    events.push({
      event: "content_block_start",
      data: { type: "content_block_start", index, content_block: startBlock(block, ctx, index) },
    });
    for (const delta of blockDeltas(block)) {
      events.push({ event: "content_block_delta", data: { type: "content_block_delta", index, delta } });
    }
    events.push({ event: "content_block_stop", data: { type: "content_block_stop", index } });
  });
  events.push(
    {
      event: "message_delta",
      data: {
        type: "message_delta",
        delta: { stop_reason: stopReasonOf(reply), stop_sequence: null, stop_details: null, container: null },
        usage: { ...usage, server_tool_use: null, output_tokens_details: null },
      },
    },
    { event: "message_stop", data: { type: "message_stop" } },
  );
  return events;
}

/** The non-streaming Message JSON of a reply (what `stream: false` returns). */
export function buildMessage(reply: FakeMessageReply, ctx: ReplyContext): Record<string, unknown> {
  reply.content.forEach(blockDeltas);
  return {
    ...messageEnvelope(reply, ctx),
    content: reply.content.map((block, index) => finalBlock(block, ctx, index)),
    stop_reason: stopReasonOf(reply),
    stop_sequence: null,
    stop_details: null,
    usage: fullUsage(resolveUsage(reply, ctx)),
  };
}

/** The SSE wire form of one event. */
export function encodeSseEvent(event: SseEvent): string {
  return `event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`;
}

/** Anthropic's error body. */
export function errorBody(
  errorType: string,
  message: string,
): { type: "error"; error: { type: string; message: string } } {
  return { type: "error", error: { type: errorType, message } };
}

/** Splits `value` by code points into pieces of at most `size` characters (at least `minPieces` when possible). */
export function splitIntoChunks(value: string, size = DEFAULT_CHUNK_CHARS, minPieces = 1): string[] {
  const chars = Array.from(value);
  if (chars.length === 0) return [];
  const pieceSize = Math.max(1, Math.min(size, Math.ceil(chars.length / minPieces)));
  const pieces: string[] = [];
  for (let i = 0; i < chars.length; i += pieceSize) pieces.push(chars.slice(i, i + pieceSize).join(""));
  return pieces;
}

function resolveUsage(reply: FakeMessageReply, ctx: ReplyContext): ResolvedUsage {
  const outputChars = reply.content.reduce((sum, block) => sum + blockText(block).length, 0);
  return {
    input_tokens: reply.usage?.input_tokens ?? Math.ceil(JSON.stringify(ctx.body.messages).length / 4),
    output_tokens: reply.usage?.output_tokens ?? Math.max(1, Math.ceil(outputChars / 4)),
    cache_read_input_tokens: reply.usage?.cache_read_input_tokens ?? 0,
    cache_creation_input_tokens: reply.usage?.cache_creation_input_tokens ?? 0,
  };
}

function fullUsage(usage: ResolvedUsage): Record<string, unknown> {
  return {
    ...usage,
    cache_creation: { ephemeral_5m_input_tokens: usage.cache_creation_input_tokens, ephemeral_1h_input_tokens: 0 },
    server_tool_use: null,
    service_tier: "standard",
    inference_geo: null,
    output_tokens_details: null,
    speed: null,
  };
}

function messageEnvelope(reply: FakeMessageReply, ctx: ReplyContext) {
  return {
    id: reply.id ?? `msg_fake_${ctx.index}`,
    type: "message",
    role: "assistant",
    model: reply.model ?? ctx.body.model,
    container: null,
    diagnostics: null,
  };
}

function stopReasonOf(reply: FakeMessageReply): FakeStopReason {
  return reply.stopReason ?? (reply.content.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn");
}

function toolUseId(block: { readonly id?: string }, ctx: ReplyContext, index: number): string {
  return block.id ?? `toolu_fake_${ctx.index}_${index}`;
}

function startBlock(block: FakeBlock, ctx: ReplyContext, index: number): Record<string, unknown> {
  switch (block.type) {
    case "text":
      return { type: "text", text: "", citations: null };
    case "thinking":
      return { type: "thinking", thinking: "", signature: "" };
    case "redacted_thinking":
      return { type: "redacted_thinking", data: block.data };
    case "tool_use":
      return {
        type: "tool_use",
        id: toolUseId(block, ctx, index),
        name: block.name,
        input: {},
        caller: { type: "direct" },
      };
  }
}

function finalBlock(block: FakeBlock, ctx: ReplyContext, index: number): Record<string, unknown> {
  switch (block.type) {
    case "text":
      return { type: "text", text: block.text, citations: null };
    case "thinking":
      return { type: "thinking", thinking: block.thinking, signature: block.signature };
    case "redacted_thinking":
      return { type: "redacted_thinking", data: block.data };
    case "tool_use":
      return {
        type: "tool_use",
        id: toolUseId(block, ctx, index),
        name: block.name,
        input: block.input,
        caller: { type: "direct" },
      };
  }
}

function blockText(block: FakeBlock): string {
  switch (block.type) {
    case "text":
      return block.text;
    case "thinking":
      return block.thinking;
    case "redacted_thinking":
      return block.data;
    case "tool_use":
      return JSON.stringify(block.input) ?? "";
  }
}

/** `deltas` (checked to concatenate to `full`), else `full` split into default pieces. Throws on a mismatch. */
export function checkedDeltas(
  full: string,
  deltas: readonly string[] | undefined,
  minPieces: number,
  what: string,
  fake = "fake-anthropic",
): string[] {
  if (deltas === undefined) return splitIntoChunks(full, DEFAULT_CHUNK_CHARS, minPieces);
  if (deltas.join("") !== full) {
    throw new Error(`${fake}: ${what} deltas ${JSON.stringify(deltas)} do not concatenate to ${JSON.stringify(full)}`);
  }
  return [...deltas];
}

function blockDeltas(block: FakeBlock): Record<string, unknown>[] {
  switch (block.type) {
    case "text":
      return checkedDeltas(block.text, block.deltas, 1, "text").map((text) => ({ type: "text_delta", text }));
    case "thinking":
      return [
        ...checkedDeltas(block.thinking, block.deltas, 1, "thinking").map((thinking) => ({
          type: "thinking_delta",
          thinking,
        })),
        { type: "signature_delta", signature: block.signature },
      ];
    case "redacted_thinking":
      return [];
    case "tool_use": {
      const json = JSON.stringify(block.input);
      if (json === undefined) throw new Error(`fake-anthropic: tool_use ${block.name} input is not JSON-serialisable`);
      return checkedDeltas(json, block.deltas, 2, "tool_use input").map((partial_json) => ({
        type: "input_json_delta",
        partial_json,
      }));
    }
  }
}
