import { DEFAULT_MAX_TOOL_ARGS_BYTES, DEFAULT_MAX_TOOL_RESULT_BYTES, MAX_MESSAGE_BYTES } from "@fleet/protocol";
import { envInt, envString, serviceEnvFields, topologyEnvFields } from "@fleet/runtime";
import { z } from "zod";

/** Every tool-runner setting, from the environment, with its default. */
export const ToolsEnv = z.object({
  ...serviceEnvFields,
  /**
   * Workspace root; a session works in `<FLEET_WORKSPACE>/<sessionId>`, or in
   * `<FLEET_WORKSPACE>/<FLEET_TENANT>/<sessionId>` when the runner serves a named tenant.
   */
  FLEET_WORKSPACE: envString(".fleet/workspaces"),
  FLEET_WORKSPACE_MODE: z.enum(["per-session", "shared"]).default("per-session"),
  /** Size quota of one workspace in MiB, for the file tools and every process a tool starts (0: none). */
  FLEET_WORKSPACE_QUOTA_MB: envInt(4_096, 0, 16_777_216),
  /** How often the runner sweeps for workspaces of deleted or archived sessions (each also goes at once). */
  FLEET_WORKSPACE_SWEEP_MS: envInt(3_600_000, 1_000, 86_400_000),
  /** Comma-separated built-in tools to serve (`read,write,edit,bash,ls,find,grep`); empty or `all` = all. */
  FLEET_TOOLS: envString("all"),
  FLEET_RUNNER_ID: envString(""),
  /**
   * Path of an MCP configuration (`{"mcpServers": {...}}`, the desktop clients' format): each
   * server's tools are served as `mcp__<server>__<tool>` beside the built-in tools (empty: none).
   */
  FLEET_MCP_CONFIG: envString(""),
  /** First wait before an MCP server that died is started again; doubled each time up to FLEET_MCP_RESTART_MAX_MS. */
  FLEET_MCP_RESTART_MS: envInt(500, 10, 600_000),
  FLEET_MCP_RESTART_MAX_MS: envInt(30_000, 10, 3_600_000),
  /** Partitions and lease TTL, written when this runner is the first service to start (as loop and store do). */
  ...topologyEnvFields,
  /** `ack_wait` of the `tool-<name>` consumers (0: the runner presence TTL, so a dead runner's calls return in seconds). */
  FLEET_TOOL_ACK_WAIT_MS: envInt(0, 0, 3_600_000),
  /** Calls of one tool running at once on this runner. */
  FLEET_TOOL_CONCURRENCY: envInt(16, 1, 10_000),
  /** How long a tool may take to settle after cancel/deadline before its abort result is published. */
  FLEET_TOOL_ABORT_GRACE_MS: envInt(1_000, 0, 60_000),
  /** On SIGTERM: how long running calls may finish before they are aborted. */
  FLEET_SHUTDOWN_GRACE_MS: envInt(10_000, 0, 600_000),
  /** Largest `args` of a tool call, as JSON; bigger ones get an error result naming the limit. */
  FLEET_MAX_TOOL_ARGS_BYTES: envInt(DEFAULT_MAX_TOOL_ARGS_BYTES, 1_024, MAX_MESSAGE_BYTES),
  /** Largest result record; bigger results are truncated and stored whole in `fleet_blobs`. */
  FLEET_MAX_TOOL_RESULT_BYTES: envInt(DEFAULT_MAX_TOOL_RESULT_BYTES, 16_384, DEFAULT_MAX_TOOL_RESULT_BYTES),
  /** `off`: tools' processes run unconfined (a warning is logged at start). */
  FLEET_SANDBOX: z.enum(["on", "off"]).default("on"),
  /** `allow`: sandboxed processes share the runner's network. */
  FLEET_SANDBOX_NETWORK: z.enum(["deny", "allow"]).default("deny"),
  FLEET_SANDBOX_BWRAP: envString("/usr/bin/bwrap"),
  /** Per process: CPU seconds, address space (MiB), largest file written (MiB); per command: processes. */
  FLEET_SANDBOX_CPU_SECONDS: envInt(300, 1, 86_400),
  FLEET_SANDBOX_MEMORY_MB: envInt(4_096, 16, 1_048_576),
  FLEET_SANDBOX_FILE_MB: envInt(1_024, 1, 16_777_216),
  FLEET_SANDBOX_MAX_PROCS: envInt(256, 8, 1_000_000),
  /** Comma-separated host paths bound read-only into the sandbox (besides /usr and the system paths). */
  FLEET_SANDBOX_RO_PATHS: envString(""),
  /** Comma-separated names of runner variables passed to sandboxed processes (none by default). */
  FLEET_SANDBOX_ENV: envString(""),
});
export type ToolsEnv = z.infer<typeof ToolsEnv>;
