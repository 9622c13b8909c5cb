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
 *   `partialJson` and re-parses `arguments` from it.
 * - `text_end` / `thinking_end` set the block's final text (and `thinkingSignature` when given);
 *   `toolcall_end` replaces the block with `toolCall`.
 *
 * Contract: never throws. A delta that does not fit (index past the end, block of another type)
 * leaves the message unchanged.
 */
export function applyDelta(message: AssistantMessage, delta: StreamDelta): AssistantMessage {
  const index = delta.contentIndex;
  const content = message.content;
  if (index > content.length) return message;
  const current = content[index];
  let next: AssistantContentBlock | undefined;
  switch (delta.type) {
    case "text_start":
      next = { type: "text", text: "" };
      break;
    case "thinking_start":
      next = { type: "thinking", thinking: "" };
      break;
    case "toolcall_start":
      next = { type: "toolCall", id: delta.id, name: delta.name, arguments: {}, partialJson: "" };
      break;
    case "text_delta":
      if (current?.type === "text") next = { ...current, text: current.text + delta.delta };
      break;
    case "thinking_delta":
      if (current?.type === "thinking") next = { ...current, thinking: current.thinking + delta.delta };
      break;
    case "toolcall_delta":
      if (current?.type === "toolCall") {
        const partialJson = (typeof current.partialJson === "string" ? current.partialJson : "") + delta.delta;
        next = { ...current, arguments: parseStreamingJson(partialJson), partialJson };
      }
      break;
    case "text_end":
      if (current?.type === "text") next = { ...current, text: delta.content };
      break;
    case "thinking_end":
      if (current?.type === "thinking") {
        const signature = delta.thinkingSignature;
        next = {
          ...current,
          thinking: delta.content,
          ...(signature !== undefined ? { thinkingSignature: signature } : {}),
        };
      }
      break;
    case "toolcall_end":
      if (current?.type === "toolCall") next = delta.toolCall;
      break;
  }
  if (next === undefined) return message;
  const nextContent = content.slice();
  nextContent[index] = next;
  return { ...message, content: nextContent };
}

/** Applies deltas in order (see `applyDelta`). Contract: never throws; `message` is not modified. */
export function applyDeltas(message: AssistantMessage, deltas: readonly StreamDelta[]): AssistantMessage {
  let current = message;
  for (const delta of deltas) current = applyDelta(current, delta);
  return current;
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
