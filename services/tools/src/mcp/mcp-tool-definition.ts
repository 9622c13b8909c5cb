import type { ToolRetryPolicy } from "@fleet/protocol";
import { z } from "zod";
import { type AnyToolDefinition, DEFAULT_TOOL_TIMEOUT_MS, type ToolContext, type ToolOutput } from "../define-tool.js";
import { buildMcpToolName } from "./mcp-tool-name.js";

/** The parts of an MCP `Tool` (from `tools/list`) Fleet reads. */
export interface McpToolInfo {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  annotations?: { readOnlyHint?: boolean; idempotentHint?: boolean; title?: string };
  execution?: { taskSupport?: string };
}

/** Runs one call of a server's tool (by its MCP name). Throws to give an error result. */
export type McpToolCaller = (mcpName: string, args: unknown, ctx: ToolContext) => Promise<ToolOutput>;

/** `safe` (re-run when its runner dies) only when the server says the tool is read-only or idempotent. */
export const decideMcpRetry = (info: McpToolInfo): ToolRetryPolicy =>
  info.annotations?.readOnlyHint === true || info.annotations?.idempotentHint === true ? "safe" : "never";

/**
 * The arguments' validator: the server's `inputSchema` (converted by zod) checks them, so an LLM
 * gets pi's validation error before anything is sent, but the arguments go to the server as they
 * came (no defaults filled in, no keys dropped). A schema zod cannot convert checks only that the
 * arguments are an object (the server validates them itself).
 */
function argsValidator(inputSchema: Record<string, unknown>): z.ZodType {
  const base = z.record(z.string(), z.unknown());
  let schema: z.ZodType | undefined;
  try {
    schema = z.fromJSONSchema(inputSchema as Parameters<typeof z.fromJSONSchema>[0]);
  } catch {
    schema = undefined;
  }
  if (!schema) return base;
  const checked = schema;
  return base.superRefine((value, ctx) => {
    const result = checked.safeParse(value);
    if (!result.success) {
      for (const issue of result.error.issues)
        ctx.addIssue({ code: "custom", message: issue.message, path: issue.path });
    }
  });
}

/**
 * A server's tool as a Fleet tool: named `mcp__<server>__<tool>`, with the server's input schema
 * and description, `retry` from its annotations, `timeoutMs` from the server's entry.
 */
export function buildMcpToolDefinition(
  server: string,
  info: McpToolInfo,
  call: McpToolCaller,
  timeoutMs: number = DEFAULT_TOOL_TIMEOUT_MS,
): AnyToolDefinition {
  const { $schema: _ignored, ...jsonSchema } = info.inputSchema;
  return Object.freeze({
    name: buildMcpToolName(server, info.name),
    description: info.description ?? info.title ?? info.annotations?.title ?? info.name,
    parameters: argsValidator(jsonSchema),
    jsonSchema,
    executionMode: "parallel" as const,
    retry: decideMcpRetry(info),
    timeoutMs,
    version: "1",
    execute: (args: unknown, ctx: ToolContext) => call(info.name, args, ctx),
  });
}
