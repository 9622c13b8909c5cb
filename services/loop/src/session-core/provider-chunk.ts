// A provider chunk (one `AssistantStreamEvent` of the open LLM call) as the session sees it: the
// events it adds to the log and the message it ends with. Pure; shared by the engine's stream
// reader (`../engine/stream-assistant.ts`) and the runtime core (`../decide/decide-input.ts`).
import {
  ABORTED_ERROR_MESSAGE,
  type AssistantMessage,
  type AssistantStreamEvent,
  type EventDraft,
  type StreamDelta,
} from "@fleet/protocol";

/**
 * The message an `error` chunk ends the call with (pi): reason `aborted` → stopReason `aborted` and
 * `Request was aborted`; otherwise stopReason `error` (the provider's errorMessage kept).
 */
export function errorChunkMessage(chunk: Extract<AssistantStreamEvent, { type: "error" }>): AssistantMessage {
  const message = chunk.error;
  if (chunk.reason === "aborted") return { ...message, stopReason: "aborted", errorMessage: ABORTED_ERROR_MESSAGE };
  return message.stopReason === "error" ? message : { ...message, stopReason: "error" };
}

/** What one chunk does to the stream: its events, the partial after it, and the final message when it ended. */
export interface ChunkStep {
  events: EventDraft[];
  /** The message streamed so far (a new object when the chunk changed it; `partial` is not modified). */
  partial: AssistantMessage | undefined;
  /** Set by `done` and `error`: the complete message (its `message_end` is in `events`). */
  final?: AssistantMessage;
}

/**
 * The events of one chunk on a stream whose message so far is `partial` (pi's order):
 * `start` → `message_start` (a copy of the provider's partial); a delta → `message_update
 * {deltas: [delta]}` (ignored before `start`, as pi does); `done` / `error` → `message_start` when
 * the stream never started, then `message_end` with the complete message.
 */
export function decideProviderChunk(partial: AssistantMessage | undefined, chunk: AssistantStreamEvent): ChunkStep {
  switch (chunk.type) {
    case "start": {
      const started = { ...chunk.partial, content: chunk.partial.content.slice() };
      return {
        events: [{ type: "message_start", message: { ...started, content: started.content.slice() } }],
        partial: started,
      };
    }
    case "done":
    case "error": {
      const final = chunk.type === "done" ? chunk.message : errorChunkMessage(chunk);
      const events: EventDraft[] = partial ? [] : [{ type: "message_start", message: { ...final } }];
      events.push({ type: "message_end", message: final });
      return { events, partial, final };
    }
    default:
      if (!partial) return { events: [], partial };
      return { events: [{ type: "message_update", deltas: [chunk] }], partial: applyStreamDelta(partial, chunk) };
  }
}
/**
 * Applies one delta to the content of a partial message, in place. A changed block is replaced by a
 * new object (blocks may be shared with an emitted `message_start`); tool-call arguments stay as
 * streamed JSON text in `partialJson` until `toolcall_end`.
 */
export function applyDeltaInPlace(content: AssistantMessage["content"], delta: StreamDelta): void {
  const i = delta.contentIndex;
  if (i > content.length) return;
  const block = content[i];
  switch (delta.type) {
    case "text_start":
      content[i] = { type: "text", text: "" };
      break;
    case "thinking_start":
      content[i] = { type: "thinking", thinking: "" };
      break;
    case "toolcall_start":
      content[i] = { type: "toolCall", id: delta.id, name: delta.name, arguments: {}, partialJson: "" };
      break;
    case "text_delta":
      if (block?.type === "text") content[i] = { ...block, text: block.text + delta.delta };
      break;
    case "thinking_delta":
      if (block?.type === "thinking") content[i] = { ...block, thinking: block.thinking + delta.delta };
      break;
    case "toolcall_delta":
      if (block?.type === "toolCall") {
        const json = (typeof block.partialJson === "string" ? block.partialJson : "") + delta.delta;
        content[i] = { ...block, partialJson: json };
      }
      break;
    case "text_end":
      if (block?.type === "text") content[i] = { ...block, text: delta.content };
      break;
    case "thinking_end":
      if (block?.type === "thinking") {
        content[i] = {
          ...block,
          thinking: delta.content,
          ...(delta.thinkingSignature !== undefined ? { thinkingSignature: delta.thinkingSignature } : {}),
        };
      }
      break;
    case "toolcall_end":
      content[i] = delta.toolCall;
      break;
  }
}

/** Applies one delta to a partial message, returning a new message (`partial` is not modified). */
export function applyStreamDelta(partial: AssistantMessage, delta: StreamDelta): AssistantMessage {
  const content = partial.content.slice();
  applyDeltaInPlace(content, delta);
  return { ...partial, content };
}
