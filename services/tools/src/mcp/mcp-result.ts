import type { ToolResultContentBlock } from "@fleet/protocol";
import type { ToolOutput } from "../define-tool.js";

/** The parts of MCP's `CallToolResult` Fleet keeps (the SDK's type, narrowed to what is read). */
export interface McpCallResult {
  content?: readonly McpContent[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
}

type McpContent =
  | { type: "text"; text: string }
  | { type: "image"; data: string; mimeType: string }
  | { type: "audio"; data: string; mimeType: string }
  | { type: "resource_link"; uri: string; name?: string; mimeType?: string; description?: string }
  | { type: "resource"; resource: { uri: string; mimeType?: string; text?: string; blob?: string } }
  | { type: string; [key: string]: unknown };

/** What `details` of an MCP tool's result holds: the server, its tool, and what content blocks cannot say. */
export interface McpResultDetails {
  server: string;
  tool: string;
  structuredContent?: Record<string, unknown>;
  /** Audio and embedded binary resources, kept whole (an LLM sees a text line naming each). */
  attachments?: Array<{ type: string; mimeType?: string; uri?: string; data: string }>;
}

function toBlock(item: McpContent, attachments: NonNullable<McpResultDetails["attachments"]>): ToolResultContentBlock {
  switch (item.type) {
    case "text":
      return { type: "text", text: String(item.text) };
    case "image":
      return { type: "image", data: String(item.data), mimeType: String(item.mimeType) };
    case "audio":
      attachments.push({ type: "audio", mimeType: String(item.mimeType), data: String(item.data) });
      return { type: "text", text: `[audio ${String(item.mimeType)}, ${String(item.data).length} base64 characters]` };
    case "resource_link":
      return { type: "text", text: `[resource ${String(item.uri)}${item.name ? ` (${String(item.name)})` : ""}]` };
    case "resource": {
      const res = (item as { resource: { uri: string; mimeType?: string; text?: string; blob?: string } }).resource;
      if (typeof res.text === "string") return { type: "text", text: res.text };
      attachments.push({
        type: "resource",
        uri: res.uri,
        data: res.blob ?? "",
        ...(res.mimeType ? { mimeType: res.mimeType } : {}),
      });
      return { type: "text", text: `[resource ${res.uri}${res.mimeType ? ` ${res.mimeType}` : ""}, binary]` };
    }
    default:
      return { type: "text", text: JSON.stringify(item) };
  }
}

/**
 * An MCP tool result as a Fleet tool output: text and image blocks as they are, other blocks as a
 * text line (their data in `details.attachments`), `isError` kept, `structuredContent` in
 * `details.structuredContent` (and as JSON text when the server sent no content at all).
 */
export function buildMcpToolOutput(server: string, tool: string, result: McpCallResult): ToolOutput {
  const attachments: NonNullable<McpResultDetails["attachments"]> = [];
  const content = (result.content ?? []).map((item) => toBlock(item, attachments));
  if (content.length === 0 && result.structuredContent !== undefined) {
    content.push({ type: "text", text: JSON.stringify(result.structuredContent) });
  }
  const details: McpResultDetails = { server, tool };
  if (result.structuredContent !== undefined) details.structuredContent = result.structuredContent;
  if (attachments.length > 0) details.attachments = attachments;
  return { content, details, isError: result.isError === true };
}
