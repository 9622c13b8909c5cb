import type { Anthropic } from "@anthropic-ai/sdk";
import type {
  AssistantMessage,
  ImageContent,
  LlmMessage,
  TextContent,
  ToolResultMessage,
  UserMessage,
} from "@fleet/protocol";

type ContentBlockParam = Anthropic.ContentBlockParam;
type ImageMediaType = Anthropic.Base64ImageSource["media_type"];

/** The prompt-caching breakpoint Fleet sets (5-minute ephemeral cache). */
export const EPHEMERAL_CACHE: Anthropic.CacheControlEphemeral = { type: "ephemeral" };

/**
 * Converts (already replay-prepared) pi messages to Anthropic `messages`:
 * - user: a non-blank string stays a string; blocks become text/image blocks (blank text dropped); a user
 *   message with nothing left is dropped;
 * - assistant: text → text (blank dropped); thinking with a signature → thinking{thinking, signature};
 *   redacted thinking → redacted_thinking{data: signature}; thinking without signature (an interrupted
 *   stream) → plain text; toolCall → tool_use{id, name, input: arguments}; a message with nothing left is
 *   dropped;
 * - consecutive toolResult messages → ONE user message of tool_result blocks, in order, each with
 *   `is_error` and its text/image content;
 * - images → `{type:"image", source:{type:"base64", media_type, data}}`;
 * - tool ids are normalised to the API's `^[a-zA-Z0-9_-]{1,64}$` on both tool_use and tool_result.
 * Then the last block of the last user message gets `cache_control: ephemeral` (a string content is turned
 * into one text block for that).
 */
export function toAnthropicMessages(messages: readonly LlmMessage[]): Anthropic.MessageParam[] {
  const params: Anthropic.MessageParam[] = [];
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    if (message.role === "user") {
      const converted = convertUser(message);
      if (converted) params.push(converted);
    } else if (message.role === "assistant") {
      const content = convertAssistant(message);
      if (content.length > 0) params.push({ role: "assistant", content });
    } else {
      const results: Anthropic.ToolResultBlockParam[] = [convertToolResult(message)];
      while (messages[i + 1]?.role === "toolResult") {
        i++;
        results.push(convertToolResult(messages[i] as ToolResultMessage));
      }
      params.push({ role: "user", content: results });
    }
  }
  markLastUserTurn(params);
  return params;
}

/** Anthropic tool ids must match `^[a-zA-Z0-9_-]+$`, at most 64 characters. */
export function toAnthropicToolId(id: string): string {
  return id.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 64);
}

function convertUser(message: UserMessage): Anthropic.MessageParam | undefined {
  if (typeof message.content === "string") {
    return message.content.trim() === "" ? undefined : { role: "user", content: message.content };
  }
  const content = convertTextAndImages(message.content);
  return content.length === 0 ? undefined : { role: "user", content };
}

function convertTextAndImages(
  blocks: readonly (TextContent | ImageContent)[],
): (Anthropic.TextBlockParam | Anthropic.ImageBlockParam)[] {
  return blocks.flatMap((block): (Anthropic.TextBlockParam | Anthropic.ImageBlockParam)[] => {
    if (block.type === "text") return block.text.trim() === "" ? [] : [{ type: "text", text: block.text }];
    return [
      {
        type: "image",
        // The API names the accepted types (jpeg/png/gif/webp) and rejects others with a clear 400.
        source: { type: "base64", media_type: block.mimeType as ImageMediaType, data: block.data },
      },
    ];
  });
}

function convertAssistant(message: AssistantMessage): ContentBlockParam[] {
  return message.content.flatMap((block): ContentBlockParam[] => {
    if (block.type === "text") return block.text.trim() === "" ? [] : [{ type: "text", text: block.text }];
    if (block.type === "toolCall") {
      return [{ type: "tool_use", id: toAnthropicToolId(block.id), name: block.name, input: block.arguments }];
    }
    if (block.redacted)
      return block.thinkingSignature ? [{ type: "redacted_thinking", data: block.thinkingSignature }] : [];
    if (block.thinkingSignature)
      return [{ type: "thinking", thinking: block.thinking, signature: block.thinkingSignature }];
    return block.thinking.trim() === "" ? [] : [{ type: "text", text: block.thinking }];
  });
}

function convertToolResult(message: ToolResultMessage): Anthropic.ToolResultBlockParam {
  const content = convertTextAndImages(message.content);
  return {
    type: "tool_result",
    tool_use_id: toAnthropicToolId(message.toolCallId),
    ...(content.length > 0 ? { content } : {}),
    is_error: message.isError,
  };
}

function markLastUserTurn(params: Anthropic.MessageParam[]): void {
  for (let i = params.length - 1; i >= 0; i--) {
    const param = params[i]!;
    if (param.role !== "user") continue;
    if (typeof param.content === "string") {
      params[i] = { role: "user", content: [{ type: "text", text: param.content, cache_control: EPHEMERAL_CACHE }] };
      return;
    }
    const last = param.content.at(-1);
    if (last && (last.type === "text" || last.type === "image" || last.type === "tool_result")) {
      param.content[param.content.length - 1] = { ...last, cache_control: EPHEMERAL_CACHE };
    }
    return;
  }
}
