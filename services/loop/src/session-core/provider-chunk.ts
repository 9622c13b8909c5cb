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

/**
 * One open stream, advanced in place by `stepProviderChunk` (the engine keeps one per LLM call, so a
 * delta costs no copy of the message): `partial` is the message so far (its content array owned by
 * the stream, never handed out), `final` the complete message once a `done` / `error` chunk came.
 */
export interface OpenStream {
  partial: AssistantMessage | undefined;
  final: AssistantMessage | undefined;
}

/**
 * The one mapping of a provider chunk (pi's order), in place on `stream`; returns the event the
 * chunk adds while the message streams, or undefined:
 * `start` → `partial` = a copy of the provider's partial, `message_start` (another copy);
 * a delta → applied to `partial`, `message_update {deltas: [delta]}` (ignored before `start`, as pi does);
 * `done` / `error` → `final` set (`errorChunkMessage`), undefined: the caller ends the message with
 * `messageEndDrafts(final, started)` (the engine: `unstartedMessageStart` and `messageEnd`).
 */
export function stepProviderChunk(stream: OpenStream, chunk: AssistantStreamEvent): EventDraft | undefined {
  switch (chunk.type) {
    case "start": {
      const partial = { ...chunk.partial, content: chunk.partial.content.slice() };
      stream.partial = partial;
      return { type: "message_start", message: { ...partial, content: partial.content.slice() } };
    }
    case "done":
      stream.final = chunk.message;
      return undefined;
    case "error":
      stream.final = errorChunkMessage(chunk);
      return undefined;
    default:
      return advanceDelta(stream, chunk) ? deltaEvent(chunk) : undefined;
  }
}

/** A delta applied in place to the open stream's partial; false (nothing applied) before `start`. */
export function advanceDelta(stream: OpenStream, delta: StreamDelta): boolean {
  if (!stream.partial) return false;
  applyDeltaInPlace(stream.partial.content, delta);
  return true;
}

/** The chunks that stream a message's content (every kind but `start`, `done` and `error`). */
export function isStreamDelta(chunk: AssistantStreamEvent): chunk is StreamDelta {
  return chunk.type !== "start" && chunk.type !== "done" && chunk.type !== "error";
}

/**
 * A delta's event once its message started: `message_update {deltas: [delta]}`, whatever the
 * deltas before it held (a delta that names no block of the message changes nothing, and is still
 * logged, as pi emits it). Before `start` a delta adds nothing (pi).
 */
export function deltaEvent(delta: StreamDelta): EventDraft {
  return { type: "message_update", deltas: [delta] };
}

/** The `message_start` of a message that ends without having started (ended before `start`, or cut before it). */
export function unstartedMessageStart(final: AssistantMessage): EventDraft {
  return { type: "message_start", message: { ...final } };
}

/** The `message_end` of a streamed message. */
export function messageEnd(final: AssistantMessage): EventDraft {
  return { type: "message_end", message: final };
}

/**
 * The events that end a streamed message: `unstartedMessageStart` first when the stream never
 * started (`started` false), then `messageEnd`.
 */
export function messageEndDrafts(final: AssistantMessage, started: boolean): EventDraft[] {
  return started ? [messageEnd(final)] : [unstartedMessageStart(final), messageEnd(final)];
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
 * `stepProviderChunk` as a pure step on a stream whose message so far is `partial` (not modified):
 * the chunk's events, including the ending ones (`messageEndDrafts`) for `done` / `error`.
 */
export function decideProviderChunk(partial: AssistantMessage | undefined, chunk: AssistantStreamEvent): ChunkStep {
  const stream: OpenStream = { partial: partial && { ...partial, content: partial.content.slice() }, final: undefined };
  const event = stepProviderChunk(stream, chunk);
  if (stream.final)
    return { events: messageEndDrafts(stream.final, partial !== undefined), partial, final: stream.final };
  return event ? { events: [event], partial: stream.partial } : { events: [], partial };
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
