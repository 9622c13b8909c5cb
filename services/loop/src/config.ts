import {
  DEFAULT_MAX_COMMAND_BYTES,
  DEFAULT_MAX_INPUT_BYTES,
  HOOK_SERVER_PATTERN,
  LIFECYCLE_HALT_POINTS,
  MAX_MESSAGE_BYTES,
} from "@fleet/protocol";
import { envBool, envInt, envString, serviceEnvFields, topologyEnvFields } from "@fleet/runtime";
import { z } from "zod";
import { DEFAULT_SNAPSHOT_EVERY } from "./snapshots/snapshot-writer.js";

/** Every loop setting, from the environment, with its default. */
export const LoopEnv = z.object({
  ...serviceEnvFields,
  FLEET_WORKER_ID: envString(""),
  ...topologyEnvFields,
  FLEET_COALESCE_MS: envInt(25, 0, 10_000),
  FLEET_COALESCE_DELTAS: envInt(64, 1, 100_000),
  FLEET_SHUTDOWN_GRACE_MS: envInt(10_000, 0, 600_000),
  FLEET_SESSION_IDLE_MS: envInt(300_000, 1_000, 86_400_000),
  /** A session's fold is snapshotted every this many events (PROTOCOL change 42); 0: never. */
  FLEET_SNAPSHOT_EVERY: envInt(DEFAULT_SNAPSHOT_EVERY, 0, 10_000_000),
  FLEET_HOOK_TIMEOUT_MS: envInt(5_000, 1, 600_000),
  FLEET_HOOK_RECHECK_MS: envInt(1_000, 0, 600_000),
  /** Named hook servers (change 53), asked in this order: comma-separated names, each `[A-Za-z0-9_-]{1,64}`. */
  FLEET_HOOK_SERVERS: envString("")
    .transform((v) =>
      v
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean),
    )
    .refine((names) => names.every((n) => HOOK_SERVER_PATTERN.test(n)) && new Set(names).size === names.length, {
      message: "must be distinct names of [A-Za-z0-9_-]{1,64}, comma-separated",
    }),
  FLEET_TOOL_TIMEOUT_MS: envInt(180_000, 1, 86_400_000),
  FLEET_TOOL_PICKUP_MS: envInt(30_000, 1, 86_400_000),
  /** The provider of a bare FLEET_DEFAULT_MODEL: `anthropic`, `scripted`, or any pi-ai / models.json provider. */
  FLEET_PROVIDER: z.string().min(1).optional(),
  /** The default model: `provider/modelId`, or a model id of FLEET_PROVIDER. */
  FLEET_DEFAULT_MODEL: envString("claude-sonnet-5"),
  /** pi's models.json: custom providers and models beside pi-ai's built-in ones (keys from the environment). */
  FLEET_MODELS: envString(""),
  FLEET_SYSTEM_PROMPT: envString("You are a helpful coding assistant. Use the tools to inspect and change files."),
  FLEET_SCRIPT: envString(""),
  FLEET_PLUGINS: envString(""),
  FLEET_APPROVAL_TOOLS: envString(""),
  /** Largest command accepted; a bigger one is rejected `invalid`, naming the limit. */
  FLEET_MAX_COMMAND_BYTES: envInt(DEFAULT_MAX_COMMAND_BYTES, 1_024, MAX_MESSAGE_BYTES),
  /** Archives go to this directory (`<dir>[/<tenant>]/sessions/<id>/`) instead of object store `fleet_archive`. */
  FLEET_ARCHIVE_DIR: envString(""),
  /** Archive sessions that ended and stayed idle for longer than this many days (decimals allowed; 0: never). */
  FLEET_RETENTION_DAYS: z
    .string()
    .optional()
    .transform((v, ctx) => {
      const n = v === undefined || v === "" ? 0 : Number(v);
      if (!Number.isFinite(n) || n < 0 || n > 36_500) {
        ctx.addIssue({ code: "custom", message: "must be a number of days between 0 and 36500" });
        return z.NEVER;
      }
      return n;
    }),
  /** Sessions the retention janitor archives per batch. */
  FLEET_RETENTION_BATCH: envInt(100, 1, 1_000),
  /** Pause between the retention janitor's passes. */
  FLEET_RETENTION_INTERVAL_MS: envInt(600_000, 100, 86_400_000),
  /** Fault injection for crash tests: `<op>:<step>`, where a lifecycle operation stops (see PROTOCOL). */
  FLEET_LIFECYCLE_HALT_AFTER: envString("").refine((v) => v === "" || LIFECYCLE_HALT_POINTS.includes(v), {
    message: `must be one of ${LIFECYCLE_HALT_POINTS.join(", ")}`,
  }),
  /** How often the tenant's scheduler (on the worker holding `loop.scheduler`) looks at its schedules. */
  FLEET_SCHEDULER_TICK_MS: envInt(1_000, 100, 60_000),
  /** Fault injection for crash tests: `fire_published` stops the scheduler between a fire's publish and its outcome. */
  FLEET_SCHEDULER_HALT_AFTER: z.enum(["", "fire_published"]).default(""),
  /** The built-in `agent` tool (sub-agents as child sessions, change 57); false: not offered. */
  FLEET_SUBAGENTS: envBool(true),
  /** Deepest child session: 1 lets root sessions start children, no grandchildren. */
  FLEET_SUBAGENT_MAX_DEPTH: envInt(3, 1, 100),
  /** Most `agent` calls started from one assistant message; later ones get an error result. */
  FLEET_SUBAGENT_MAX_FANOUT: envInt(8, 1, 1_000),
  /** What a parent's abort does to its children: `terminate` (abort them), `request_cancel` (steer them to stop), `abandon`. */
  FLEET_SUBAGENT_CLOSE_POLICY: z.enum(["terminate", "request_cancel", "abandon"]).default("terminate"),
  /** How long a parent waits for a child's answer; each progress record restarts the wait. */
  FLEET_SUBAGENT_TIMEOUT_MS: envInt(3_600_000, 1_000, 7 * 86_400_000),
  /** At most one progress update per child per this many ms (the parent's `tool_execution_update`). */
  FLEET_SUBAGENT_PROGRESS_MS: envInt(1_000, 0, 600_000),
  /** Largest command body by reference (PROTOCOL "Large inputs") read from `fleet_inputs`. */
  FLEET_MAX_INPUT_BYTES: envInt(DEFAULT_MAX_INPUT_BYTES, MAX_MESSAGE_BYTES, 1024 * 1024 * 1024),
  /**
   * Check every appended event against the `FleetEvent` schema before writing it. Off by default:
   * the loop builds events from values validated where they entered; the test suite turns it on.
   */
  FLEET_VALIDATE_APPENDS: envBool(false),
  ANTHROPIC_API_KEY: z.string().optional(),
  ANTHROPIC_BASE_URL: z.string().url().optional(),
});
export type LoopEnv = z.infer<typeof LoopEnv>;
