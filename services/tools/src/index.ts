// Public surface of @fleet/tools: the tool SDK, the runner and pi's built-in coding tools.

export type { BashDetails, BashToolOptions } from "./builtin/bash.js";
export {
  BUILTIN_TOOL_NAMES,
  type BuiltinToolName,
  type BuiltinToolOptions,
  builtinTools,
  createBuiltinTools,
  selectBuiltinTools,
} from "./builtin/index.js";
export type { ReadToolOptions } from "./builtin/read.js";
export { ToolsEnv } from "./config.js";
export {
  type AnyToolDefinition,
  type BlobSink,
  DEFAULT_TOOL_TIMEOUT_MS,
  defineTool,
  type ToolContext,
  type ToolDefinition,
  type ToolOutput,
  type ToolSpec,
  toRegistration,
} from "./define-tool.js";
export {
  isStdioServer,
  loadMcpConfig,
  McpConfig,
  type McpHttpServer,
  McpServerEntry,
  type McpStdioServer,
  parseMcpConfig,
} from "./mcp/mcp-config.js";
export {
  createMcpServerConnection,
  IDEMPOTENCY_META_KEY,
  type McpServerConnection,
  type McpServerConnectionOptions,
  type McpServerStatus,
} from "./mcp/mcp-server-connection.js";
export { buildMcpToolName } from "./mcp/mcp-tool-name.js";
export { createMcpToolSource, type McpToolSource } from "./mcp/mcp-tool-source.js";
export { createMemoryBlobSink, type MemoryBlobSink } from "./memory-blob-sink.js";
export { runToolRunnerProcess } from "./run-process.js";
export { RUNNER_ID_HEADER } from "./runner/call-records.js";
export { createToolRunner } from "./runner/create-tool-runner.js";
export { defaultRunnerId } from "./runner/runner-id.js";
export { schemaHash } from "./runner/tool-registry.js";
export type { StartOutcome, ToolRunner, ToolRunnerOptions } from "./runner/tool-runner.js";
export { openSandbox } from "./sandbox/open-sandbox.js";
export type {
  ProcessSandbox,
  SandboxCheck,
  SandboxedProcess,
  SandboxStart,
  SandboxStatus,
} from "./sandbox/process-sandbox.js";
export {
  DEFAULT_SANDBOX_ENV,
  DEFAULT_SANDBOX_LIMITS,
  DEFAULT_SANDBOX_SETTINGS,
  type SandboxLimits,
  type SandboxSettings,
  sandboxSettings,
  sandboxSettingsFromEnv,
} from "./sandbox/sandbox-settings.js";
export { type ArgsValidation, validateToolArgs } from "./validate-args.js";
export {
  createWorkspaceFiles,
  type DirEntry,
  type FileInfo,
  type FileKind,
  type WorkspaceFiles,
  type WorkspaceWalkEntry,
} from "./workspace/workspace-files.js";
export { ensureWorkspace, WorkspaceEscapeError } from "./workspace/workspace-path.js";
export { createWorkspaceQuota, type WorkspaceQuota, WorkspaceQuotaError } from "./workspace/workspace-quota.js";
