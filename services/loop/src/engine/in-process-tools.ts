// An `executeTool` port over plain functions: tests, benchmarks, offline use.
import type { ExecuteTool, ToolOutput } from "./types.js";

export type ToolHandler = (
  args: unknown,
  signal: AbortSignal | undefined,
  onUpdate: (partialResult: unknown) => void,
  toolCallId: string,
) => ToolOutput | Promise<ToolOutput>;

/** Dispatches by tool name. A name with no handler rejects with `No handler for tool <name>`. */
export function createInProcessExecutor(handlers: Readonly<Record<string, ToolHandler>>): ExecuteTool {
  return async (call, signal, onUpdate) => {
    const handler = Object.hasOwn(handlers, call.toolName) ? handlers[call.toolName] : undefined;
    if (!handler) throw new Error(`No handler for tool ${call.toolName}`);
    return handler(call.args, signal, onUpdate, call.toolCallId);
  };
}
