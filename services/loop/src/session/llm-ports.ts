// What the shell hands the LLM and the tool runners: the provider port of a model (content by
// reference resolved), the trace context of the call, the model's window and prices, the tools.
import { AGENT_TOOL_NAME, chatTraceparent, type ModelRef, toolTraceparent } from "@fleet/protocol";
import { resolveBlobBlocks } from "@fleet/runtime";
import type { StreamFn, StreamOptions, ToolDefinition } from "../engine/index.js";
import { streamFnFor } from "../provider-port.js";
import { getModelInfo, type ModelInfo } from "../providers/models.js";
import { resolvingBlobs } from "../resolving-blobs.js";
import type { SessionShell } from "./session-shell.js";

export function modelInfoOf(shell: SessionShell, model: ModelRef): ModelInfo {
  return shell.deps.modelInfo?.(model) ?? getModelInfo(model.modelId);
}

/** The LLM port for `provider`; content by reference in the context is resolved first. */
export function providerStreamFn(shell: SessionShell, provider: string): StreamFn {
  const deps = shell.deps;
  return resolvingBlobs(streamFnFor(deps.providers, provider, deps.now), deps.blobs, deps.now);
}

/** `options` with the trace context of the LLM call about to be sent (its `chat` span). */
export function traced(shell: SessionShell, options: StreamOptions): StreamOptions {
  const cursor = shell.traceCursor;
  const traceparent = chatTraceparent(cursor);
  const tracestate = cursor.run?.root.tracestate;
  return traceparent ? { ...options, traceparent, ...(tracestate ? { tracestate } : {}) } : options;
}

/** The trace context of a tool call of the open run (its `execute_tool` span). */
export function toolTrace(shell: SessionShell, toolCallId: string): { traceparent?: string; tracestate?: string } {
  const root = shell.traceCursor.run?.root;
  const traceparent = root && toolTraceparent(shell.traceCursor, root.runId, toolCallId);
  if (!traceparent) return {};
  return { traceparent, ...(root.tracestate ? { tracestate: root.tracestate } : {}) };
}

/**
 * `value` with its content by reference resolved, for a summary's prompt; when an object cannot
 * be read the summary is made from the previews (and a warning logged).
 */
export async function withContent<T>(shell: SessionShell, value: T): Promise<T> {
  try {
    return await resolveBlobBlocks(value, shell.deps.blobs);
  } catch (err) {
    shell.log.warn({ evt: "content_unresolved", err }, "summarizing from previews: content by reference unreadable");
    return value;
  }
}

/** Every registered tool, and the `agent` tool when sub-agents are on. */
export function toolDefinitions(shell: SessionShell): ToolDefinition[] {
  const tools: ToolDefinition[] = shell.deps.registry.all().map((t) => ({
    name: t.name,
    description: t.description,
    parameters: t.parameters,
    executionMode: t.executionMode,
  }));
  const sub = shell.deps.subAgents;
  if (sub && !tools.some((t) => t.name === AGENT_TOOL_NAME)) tools.push(sub.tool());
  return tools;
}
