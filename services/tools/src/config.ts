import { envInt, envString, serviceEnvFields } from "@fleet/runtime";
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
  /** Comma-separated built-in tools to serve (`read,write,edit,bash,ls,find,grep`); empty or `all` = all. */
  FLEET_TOOLS: envString("all"),
  FLEET_RUNNER_ID: envString(""),
  /** Written to `fleet_config.partitions` when this runner is the first service to start (as loop and store do). */
  FLEET_PARTITIONS: envInt(16, 1, 4096),
  /** `ack_wait` of the `tool-<name>` consumers, when this runner creates them. */
  FLEET_TOOL_ACK_WAIT_MS: envInt(30_000, 1_000, 3_600_000),
  /** Calls of one tool running at once on this runner. */
  FLEET_TOOL_CONCURRENCY: envInt(16, 1, 10_000),
  /** How long a tool may take to settle after cancel/deadline before its abort result is published. */
  FLEET_TOOL_ABORT_GRACE_MS: envInt(1_000, 0, 60_000),
  /** On SIGTERM: how long running calls may finish before they are aborted. */
  FLEET_SHUTDOWN_GRACE_MS: envInt(10_000, 0, 600_000),
});
export type ToolsEnv = z.infer<typeof ToolsEnv>;
