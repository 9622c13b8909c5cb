import type { BlobRef, ToolRegistration, ToolResultContentBlock, ToolRetryPolicy } from "@fleet/protocol";
import type { Logger } from "pino";
import { z } from "zod";
import type { ProcessSandbox } from "./sandbox/process-sandbox.js";
import type { WorkspaceFiles } from "./workspace/workspace-files.js";

/** Default deadline of one call when neither the tool nor the request sets one: 3 minutes. */
export const DEFAULT_TOOL_TIMEOUT_MS = 180_000;

/** What a tool returns. Tools signal failure by throwing (pi's contract); `isError` is for failures that still carry details (bash's exit code). */
export interface ToolOutput {
  content: ToolResultContentBlock[];
  details?: unknown;
  /** Marks the result as an error without throwing, so `details` survive. */
  isError?: boolean;
  /** pi's `terminate`: ask the loop not to call the LLM again after this batch. */
  terminate?: boolean;
}

/** Stores payloads too large for a message in object store `fleet_blobs` (claim check). */
export interface BlobSink {
  /** Contract: stores `data` under a name derived from `name` (unique per call) and returns its reference. May throw on I/O errors. */
  put(name: string, data: Uint8Array | string, opts?: { mimeType?: string }): Promise<BlobRef>;
}

/** Everything a tool may use while it runs. Side effects enter through here, never through globals. */
export interface ToolContext {
  /** Aborted on cancel (`fleet.tool.cancel.<sid>.<toolCallId>`), deadline, or runner shutdown. Honouring it is the tool's job. */
  signal: AbortSignal;
  /** Streams a partial result; the runner publishes it (throttled) as an `update` record. Never throws. */
  onUpdate: (partial: unknown) => void;
  /**
   * Pushes the call's deadline to now plus its budget, for a tool that shows it is making progress
   * (MCP progress notifications). The loop waits as long: each `update` record restarts its wait.
   * Absent outside a runner. Never throws.
   */
  extendDeadline?: () => void;
  /** W3C trace context of the call (`traceparent`, `tracestate`) when its request message carried one. */
  traceContext?: Readonly<Record<string, string>>;
  /**
   * Absolute path of the session's workspace root (exists when `execute` runs). To read or write
   * files in it, use `files`: a path checked here and opened later can be swapped for a symlink
   * that leads anywhere by a process running beside the tool.
   */
  workspace: string;
  /**
   * The workspace's files, opened so that no symlink leads outside it, whenever it is swapped
   * (and within the workspace's quota). Every tool that touches the workspace goes through here.
   */
  files: WorkspaceFiles;
  logger: Logger;
  sessionId: string;
  toolCallId: string;
  blobs: BlobSink;
  /**
   * Every process a tool starts goes through here: bubblewrap with the workspace as the only
   * writable place, no network, resource limits and a clean environment (FLEET_SANDBOX=off:
   * unconfined). Probed once when the runner starts.
   */
  sandbox: ProcessSandbox;
}

/** Arguments of `defineTool`. */
export interface ToolSpec<S extends z.ZodType> {
  /** A NATS subject token: `^[A-Za-z0-9_-]{1,64}$`. */
  name: string;
  description: string;
  /** zod schema of the arguments; its JSON Schema (input side) is published in `fleet_tools`. Should be a `z.object`. */
  parameters: S;
  /** pi's execution mode: `sequential` forces the whole batch to run one call at a time. Default `parallel`. */
  executionMode?: "parallel" | "sequential";
  /**
   * What happens when the runner executing a call dies: `safe` (idempotent) re-runs it on another
   * runner; `never` gives the error result `Tool runner lost while executing <name>`. Default `safe`.
   */
  retry?: ToolRetryPolicy;
  /** Deadline of one call when the request sets none. Default 3 minutes. */
  timeoutMs?: number;
  /** Registration version; bump it when the schema changes (rolling upgrade). Default `"1"`. */
  version?: string;
  /**
   * Runs one call with validated arguments. Contract: throw an Error to produce an error result
   * whose text is the message verbatim; return a string as a shorthand for one text block.
   */
  execute(args: z.output<S>, ctx: ToolContext): Promise<ToolOutput | string> | ToolOutput | string;
}

/** A tool as runners serve it. Built by `defineTool`; immutable. */
export interface ToolDefinition<S extends z.ZodType = z.ZodType> {
  readonly name: string;
  readonly description: string;
  readonly parameters: S;
  /** JSON Schema of `parameters` (input side, no `$schema` key). */
  readonly jsonSchema: Record<string, unknown>;
  readonly executionMode: "parallel" | "sequential";
  readonly retry: ToolRetryPolicy;
  readonly timeoutMs: number;
  readonly version: string;
  /** Method syntax on purpose: a tool of any argument type is assignable to `AnyToolDefinition`. */
  execute(args: z.output<S>, ctx: ToolContext): Promise<ToolOutput | string> | ToolOutput | string;
}

/** A tool of any argument type (for lists of tools). */
export type AnyToolDefinition = ToolDefinition<z.ZodType>;

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** Defines a tool. Throws (programmer mistake) on an invalid name or timeout. */
export function defineTool<S extends z.ZodType>(spec: ToolSpec<S>): ToolDefinition<S> {
  if (!TOOL_NAME.test(spec.name))
    throw new Error(`invalid tool name ${JSON.stringify(spec.name)}: must match ${TOOL_NAME}`);
  const timeoutMs = spec.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0)
    throw new Error(`tool ${spec.name}: timeoutMs must be a positive integer`);
  const { $schema: _ignored, ...jsonSchema } = z.toJSONSchema(spec.parameters, { io: "input" }) as Record<
    string,
    unknown
  >;
  return Object.freeze({
    name: spec.name,
    description: spec.description,
    parameters: spec.parameters,
    jsonSchema,
    executionMode: spec.executionMode ?? "parallel",
    retry: spec.retry ?? "safe",
    timeoutMs,
    version: spec.version ?? "1",
    execute: spec.execute,
  });
}

/** The `fleet_tools` value of a tool (without the runner fields). */
export function toRegistration(tool: AnyToolDefinition): ToolRegistration {
  return {
    name: tool.name,
    description: tool.description,
    parameters: tool.jsonSchema,
    executionMode: tool.executionMode,
    retry: tool.retry,
    timeoutMs: tool.timeoutMs,
    version: tool.version,
  };
}

/** Normalises what `execute` returned. */
export function toToolOutput(value: ToolOutput | string): ToolOutput {
  return typeof value === "string" ? { content: [{ type: "text", text: value }] } : value;
}
