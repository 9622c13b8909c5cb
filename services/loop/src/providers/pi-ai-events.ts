// pi-ai's AssistantMessageEvent as the engine's AssistantStreamEvent (a pure mapping).
import {
  ABORTED_ERROR_MESSAGE,
  type AssistantMessage,
  type AssistantStreamEvent,
  type ToolCallContent,
} from "@fleet/protocol";
import type { AssistantMessageEvent, AssistantMessage as PiAssistantMessage } from "@mariozechner/pi-ai";

/**
 * pi-ai's message as Fleet's: a deep copy (pi-ai mutates one object for the whole call), with the
 * providers' scratch fields dropped from tool calls. An `aborted` message says exactly
 * "Request was aborted" (SDKs word it their own way).
 */
export function fleetMessage(message: PiAssistantMessage): AssistantMessage {
  const copy = structuredClone(message) as PiAssistantMessage;
  const content = copy.content.map((block) => (block.type === "toolCall" ? toolCallOf(block) : block));
  return {
    ...copy,
    content,
    ...(copy.stopReason === "aborted" ? { errorMessage: ABORTED_ERROR_MESSAGE } : {}),
  } as AssistantMessage;
}

/**
 * The engine's event for pi-ai's `event`. Deltas carry no partial; `toolcall_start` takes the
 * call's id and name from pi-ai's partial (pi keeps them there).
 */
export function fleetStreamEvent(event: AssistantMessageEvent): AssistantStreamEvent {
  switch (event.type) {
    case "start":
      return { type: "start", partial: fleetMessage(event.partial) };
    case "done":
      return { type: "done", reason: event.reason, message: fleetMessage(event.message) };
    case "error":
      return { type: "error", reason: event.reason, error: fleetMessage(event.error) };
    case "text_start":
    case "thinking_start":
      return { type: event.type, contentIndex: event.contentIndex };
    case "text_delta":
    case "thinking_delta":
    case "toolcall_delta":
      return { type: event.type, contentIndex: event.contentIndex, delta: event.delta };
    case "text_end":
      return { type: "text_end", contentIndex: event.contentIndex, content: event.content };
    case "thinking_end": {
      const block = event.partial.content[event.contentIndex];
      const signature = block?.type === "thinking" ? block.thinkingSignature : undefined;
      return {
        type: "thinking_end",
        contentIndex: event.contentIndex,
        content: event.content,
        ...(signature ? { thinkingSignature: signature } : {}),
      };
    }
    case "toolcall_start": {
      const block = event.partial.content[event.contentIndex];
      const call = block?.type === "toolCall" ? block : undefined;
      return { type: "toolcall_start", contentIndex: event.contentIndex, id: call?.id ?? "", name: call?.name ?? "" };
    }
    case "toolcall_end":
      return { type: "toolcall_end", contentIndex: event.contentIndex, toolCall: toolCallOf(event.toolCall) };
  }
}

function toolCallOf(call: PiAssistantMessage["content"][number] & { type: "toolCall" }): ToolCallContent {
  return {
    type: "toolCall",
    id: call.id,
    name: call.name,
    arguments: structuredClone(call.arguments ?? {}),
    ...(call.thoughtSignature ? { thoughtSignature: call.thoughtSignature } : {}),
  };
}
