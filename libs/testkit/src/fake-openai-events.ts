// Turns a scripted reply into OpenAI stream events: Chat Completions chunks or Responses events (pure).

import { checkedDeltas, type SseEvent } from "./fake-anthropic-events.js";
import type { FakeOpenAIBlock, FakeOpenAIReply, OpenAIRequestBody } from "./fake-openai-types.js";

const FAKE = "fake-openai";
const CREATED = 1_700_000_000;

/** Per-request inputs the reply does not carry. */
export interface OpenAIReplyContext {
  readonly index: number;
  readonly body: OpenAIRequestBody;
}

interface ResolvedUsage {
  readonly input: number;
  readonly output: number;
  readonly cached: number;
  readonly reasoning: number;
}

/**
 * The Chat Completions chunks of a reply, each written as `data: <JSON>` (the server adds
 * `data: [DONE]`): a role chunk, the content deltas (`content`, `reasoning_content`, `tool_calls`),
 * a chunk with `finish_reason`, and a usage chunk when the request asked for
 * `stream_options.include_usage`. Throws when a block's `deltas` do not match its value.
 */
export function buildChatChunks(reply: FakeOpenAIReply, ctx: OpenAIReplyContext): SseEvent[] {
  const envelope = {
    id: `chatcmpl-fake-${ctx.index}`,
    object: "chat.completion.chunk",
    created: CREATED,
    model: reply.model ?? ctx.body.model,
  };
  const chunk = (delta: Record<string, unknown>, finish: string | null = null): SseEvent => ({
    event: "",
    data: { ...envelope, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] },
  });
  const chunks: SseEvent[] = [chunk({ role: "assistant", content: "" })];
  let toolIndex = 0;
  reply.content.forEach((block, blockIndex) => {
    if (block.type === "text") {
      for (const piece of deltasOf(block)) chunks.push(chunk({ content: piece }));
    } else if (block.type === "reasoning") {
      for (const piece of deltasOf(block)) chunks.push(chunk({ reasoning_content: piece }));
    } else {
      const index = toolIndex++;
      chunks.push(
        chunk({
          tool_calls: [
            {
              index,
              id: toolCallId(block, ctx, blockIndex),
              type: "function",
              function: { name: block.name, arguments: "" },
            },
          ],
        }),
      );
      for (const piece of deltasOf(block))
        chunks.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  chunks.push(chunk({}, finishReasonOf(reply)));
  if (ctx.body.stream_options?.include_usage === true) {
    const usage = resolveUsage(reply, ctx);
    chunks.push({
      event: "",
      data: {
        ...envelope,
        choices: [],
        usage: {
          prompt_tokens: usage.input,
          completion_tokens: usage.output,
          total_tokens: usage.input + usage.output,
          prompt_tokens_details: { cached_tokens: usage.cached },
          completion_tokens_details: { reasoning_tokens: usage.reasoning },
        },
      },
    });
  }
  return chunks;
}

/**
 * The Responses events of a reply, each written as `event: <type>` + `data: <JSON>`:
 * `response.created`, per block its output item (`reasoning` with summary text, `message` with
 * output text, `function_call` with arguments) added, streamed and done, then `response.completed`
 * (`status: incomplete` for a `length` finish) carrying the usage.
 */
export function buildResponsesEvents(reply: FakeOpenAIReply, ctx: OpenAIReplyContext): SseEvent[] {
  const id = `resp_fake_${ctx.index}`;
  const model = reply.model ?? ctx.body.model;
  const events: SseEvent[] = [];
  const push = (type: string, data: Record<string, unknown>) =>
    events.push({ event: type, data: { type, sequence_number: events.length, ...data } });
  const response = (status: string, extra: Record<string, unknown> = {}) => ({
    id,
    object: "response",
    created_at: CREATED,
    status,
    model,
    output: [],
    ...extra,
  });
  push("response.created", { response: response("in_progress") });
  reply.content.forEach((block, output_index) => {
    const itemId = `${block.type === "tool_call" ? "fc" : block.type === "reasoning" ? "rs" : "msg"}_fake_${ctx.index}_${output_index}`;
    if (block.type === "reasoning") {
      push("response.output_item.added", { output_index, item: { type: "reasoning", id: itemId, summary: [] } });
      push("response.reasoning_summary_part.added", {
        item_id: itemId,
        output_index,
        summary_index: 0,
        part: { type: "summary_text", text: "" },
      });
      for (const delta of deltasOf(block)) {
        push("response.reasoning_summary_text.delta", { item_id: itemId, output_index, summary_index: 0, delta });
      }
      push("response.output_item.done", {
        output_index,
        item: { type: "reasoning", id: itemId, summary: [{ type: "summary_text", text: block.text }] },
      });
    } else if (block.type === "text") {
      const part = { type: "output_text", text: "", annotations: [] };
      push("response.output_item.added", {
        output_index,
        item: { type: "message", id: itemId, role: "assistant", status: "in_progress", content: [] },
      });
      push("response.content_part.added", { item_id: itemId, output_index, content_index: 0, part });
      for (const delta of deltasOf(block)) {
        push("response.output_text.delta", { item_id: itemId, output_index, content_index: 0, delta });
      }
      push("response.output_text.done", { item_id: itemId, output_index, content_index: 0, text: block.text });
      push("response.output_item.done", {
        output_index,
        item: {
          type: "message",
          id: itemId,
          role: "assistant",
          status: "completed",
          content: [{ ...part, text: block.text }],
        },
      });
    } else {
      const call = {
        type: "function_call",
        id: itemId,
        call_id: toolCallId(block, ctx, output_index),
        name: block.name,
      };
      const json = argumentsJson(block);
      push("response.output_item.added", { output_index, item: { ...call, arguments: "", status: "in_progress" } });
      for (const delta of deltasOf(block)) {
        push("response.function_call_arguments.delta", { item_id: itemId, output_index, delta });
      }
      push("response.function_call_arguments.done", { item_id: itemId, output_index, arguments: json });
      push("response.output_item.done", { output_index, item: { ...call, arguments: json, status: "completed" } });
    }
  });
  const usage = resolveUsage(reply, ctx);
  const incomplete = reply.finishReason === "length";
  push("response.completed", {
    response: response(incomplete ? "incomplete" : "completed", {
      ...(incomplete ? { incomplete_details: { reason: "max_output_tokens" } } : {}),
      usage: {
        input_tokens: usage.input,
        output_tokens: usage.output,
        total_tokens: usage.input + usage.output,
        input_tokens_details: { cached_tokens: usage.cached },
        output_tokens_details: { reasoning_tokens: usage.reasoning },
      },
    }),
  });
  return events;
}

/** The error event ending a stream early, in the request's protocol. */
export function streamErrorEvent(api: "chat" | "responses", code: string, message: string): SseEvent {
  return api === "chat"
    ? { event: "", data: { error: { message, type: "server_error", param: null, code } } }
    : { event: "error", data: { type: "error", code, message, param: null } };
}

/** OpenAI's error body. */
export function openAIErrorBody(message: string, type = "invalid_request_error", code: string | null = null) {
  return { error: { message, type, param: null, code } };
}

/** One event on the wire: `event:` only when named (Chat Completions chunks are bare `data:` lines). */
export function encodeOpenAIEvent(event: SseEvent): string {
  return `${event.event ? `event: ${event.event}\n` : ""}data: ${JSON.stringify(event.data)}\n\n`;
}

function finishReasonOf(reply: FakeOpenAIReply): string {
  return reply.finishReason ?? (reply.content.some((b) => b.type === "tool_call") ? "tool_calls" : "stop");
}

function toolCallId(block: { readonly id?: string }, ctx: OpenAIReplyContext, index: number): string {
  return block.id ?? `call_fake_${ctx.index}_${index}`;
}

function argumentsJson(block: FakeOpenAIBlock & { type: "tool_call" }): string {
  const json = JSON.stringify(block.arguments);
  if (json === undefined) throw new Error(`${FAKE}: tool call ${block.name} arguments are not JSON-serialisable`);
  return json;
}

function deltasOf(block: FakeOpenAIBlock): string[] {
  if (block.type === "tool_call")
    return checkedDeltas(argumentsJson(block), block.deltas, 2, "tool call arguments", FAKE);
  return checkedDeltas(block.text, block.deltas, 1, block.type, FAKE);
}

function resolveUsage(reply: FakeOpenAIReply, ctx: OpenAIReplyContext): ResolvedUsage {
  const outputChars = reply.content.reduce(
    (sum, b) => sum + (b.type === "tool_call" ? argumentsJson(b).length : b.text.length),
    0,
  );
  const requestChars = JSON.stringify(ctx.body.messages ?? ctx.body.input ?? "").length;
  return {
    input: reply.usage?.input ?? Math.ceil(requestChars / 4),
    output: reply.usage?.output ?? Math.max(1, Math.ceil(outputChars / 4)),
    cached: reply.usage?.cached ?? 0,
    reasoning: reply.usage?.reasoning ?? 0,
  };
}
