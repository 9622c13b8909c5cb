// Rebuilds a streaming assistant message from the wire deltas of `message_update` events.
import type { PiAssistantMessageEvent, StreamDelta } from "../assistant-stream.js";
import type { AssistantContentBlock } from "../content.js";
import type { AssistantMessage } from "../messages.js";
import { parseStreamingJson } from "./partial-json.js";

/**
 * A tool call block while its arguments stream in. As in pi's partial messages, `partialJson` holds
 * the JSON text received so far and `arguments` its best-effort parse; `toolcall_end` replaces the
 * block with the final tool call, which has no `partialJson`.
 */
export type StreamingToolCall = Extract<AssistantContentBlock, { type: "toolCall" }> & { partialJson?: string };

/**
 * Applies one delta and returns a new message; `message` is not modified (unchanged blocks are shared).
 *
 * Merge rules, by delta type:
 * - `*_start` puts a fresh block at `contentIndex` (`text: ""`, `thinking: ""`, or the tool call's
 *   `id`/`name` with `arguments: {}` and `partialJson: ""`); an index equal to the block count appends.
 * - `text_delta` / `thinking_delta` append to the block's text; `toolcall_delta` appends to
 *   `partialJson` and re-parses `arguments` from it (`parseStreamingJson`).
 * - `text_end` / `thinking_end` set the block's final text (and `thinkingSignature` when given);
 *   `toolcall_end` replaces the block with `toolCall`.
 *
 * Contract: never throws. A delta that does not fit (index past the end, block of another type)
 * leaves the message unchanged.
 */
export function applyDelta(message: AssistantMessage, delta: StreamDelta): AssistantMessage {
  return applyDeltas(message, [delta]);
}

/**
 * Applies deltas in order (see `applyDelta`), copying the message and its content once and parsing
 * a streaming tool call's `arguments` once, from its `partialJson` after the last delta (the same
 * result as `applyDelta` one delta at a time). Contract: never throws; `message` is not modified
 * (unchanged blocks are shared); `message` itself when no delta changes anything.
 */
export function applyDeltas(message: AssistantMessage, deltas: readonly StreamDelta[]): AssistantMessage {
  let content: AssistantContentBlock[] | undefined;
  /** Indices of tool calls whose `partialJson` grew last: their `arguments` are parsed at the end. */
  let reparse: Set<number> | undefined;
  for (const delta of deltas) {
    const blocks: readonly AssistantContentBlock[] = content ?? message.content;
    const index = delta.contentIndex;
    if (index > blocks.length) continue;
    const next = nextBlock(blocks[index], delta);
    if (next === undefined) continue;
    content ??= message.content.slice();
    content[index] = next;
    if (delta.type === "toolcall_delta") {
      reparse ??= new Set();
      reparse.add(index);
    } else {
      reparse?.delete(index);
    }
  }
  if (!content) return message;
  if (reparse) {
    for (const index of reparse) {
      const block = content[index] as StreamingToolCall | undefined;
      if (block?.type === "toolCall" && typeof block.partialJson === "string") {
        content[index] = { ...block, arguments: parseStreamingJson(block.partialJson) };
      }
    }
  }
  return { ...message, content };
}

/** The block at a delta's index after the delta; `undefined` when the delta does not fit. */
function nextBlock(current: AssistantContentBlock | undefined, delta: StreamDelta): AssistantContentBlock | undefined {
  switch (delta.type) {
    case "text_start":
      return { type: "text", text: "" };
    case "thinking_start":
      return { type: "thinking", thinking: "" };
    case "toolcall_start":
      return { type: "toolCall", id: delta.id, name: delta.name, arguments: {}, partialJson: "" };
    case "text_delta":
      return current?.type === "text" ? { ...current, text: current.text + delta.delta } : undefined;
    case "thinking_delta":
      return current?.type === "thinking" ? { ...current, thinking: current.thinking + delta.delta } : undefined;
    case "toolcall_delta": {
      if (current?.type !== "toolCall") return undefined;
      const streaming = current as StreamingToolCall;
      const partialJson = (typeof streaming.partialJson === "string" ? streaming.partialJson : "") + delta.delta;
      return { ...streaming, partialJson };
    }
    case "text_end":
      return current?.type === "text" ? { ...current, text: delta.content } : undefined;
    case "thinking_end": {
      if (current?.type !== "thinking") return undefined;
      const signature = delta.thinkingSignature;
      return {
        ...current,
        thinking: delta.content,
        ...(signature !== undefined ? { thinkingSignature: signature } : {}),
      };
    }
    case "toolcall_end":
      return current?.type === "toolCall" ? delta.toolCall : undefined;
  }
}

/** One of pi's `message_update` events, rebuilt: the partial message and the event that produced it. */
export interface PiMessageUpdate {
  message: AssistantMessage;
  assistantMessageEvent: PiAssistantMessageEvent;
}

/**
 * Expands one wire `message_update` into pi's sequence of `{message, assistantMessageEvent}`, one
 * per delta, in order. `message` is the partial before these deltas: the `message_start` message for
 * the first update of a message, else the last `message` of the previous expansion.
 * Every element carries its own snapshot (`message === assistantMessageEvent.partial`); snapshots are
 * never modified later. Contract: never throws.
 */
export function expandMessageUpdate(message: AssistantMessage, deltas: readonly StreamDelta[]): PiMessageUpdate[] {
  const out: PiMessageUpdate[] = [];
  let partial = message;
  for (const delta of deltas) {
    partial = applyDelta(partial, delta);
    out.push({ message: partial, assistantMessageEvent: { ...delta, partial } });
  }
  return out;
}
