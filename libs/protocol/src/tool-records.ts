import { z } from "zod";
import { ToolResultContentBlock } from "./content.js";
import { EventId, SessionId, ToolCallId, ToolName } from "./ids.js";
import { Traceparent, Tracestate } from "./trace/trace-context.js";

/** Published to `fleet.tool.call.<toolName>` with msgID `<sessionId>.<toolCallId>`. `deadline` is epoch ms. */
export const ToolCallRequest = z.object({
  sessionId: SessionId,
  runId: EventId,
  toolCallId: ToolCallId,
  toolName: ToolName,
  args: z.unknown(),
  deadline: z.number().int().nonnegative(),
  /** W3C trace context of the call's `execute_tool` span (change 46): a runner's own spans are its children. */
  traceparent: Traceparent.optional(),
  tracestate: Tracestate.optional(),
});
export type ToolCallRequest = z.infer<typeof ToolCallRequest>;

/**
 * Records on `fleet.tool.result.<sessionId>.<toolCallId>`, in this order: one `started`, any number
 * of `update`, one `result`. A runner acks the call only after its `result` is stored.
 */
export const ToolStartedRecord = z.object({
  kind: z.literal("started"),
  runnerId: z.string().min(1),
  ts: z.number().optional(),
});
export const ToolUpdateRecord = z.object({ kind: z.literal("update"), partialResult: z.unknown() });
export const ToolFinalRecord = z.object({
  kind: z.literal("result"),
  content: z.array(ToolResultContentBlock),
  details: z.unknown().optional(),
  isError: z.boolean(),
  terminate: z.boolean().optional(),
});
export const ToolResultRecord = z.discriminatedUnion("kind", [ToolStartedRecord, ToolUpdateRecord, ToolFinalRecord]);
export type ToolResultRecord = z.infer<typeof ToolResultRecord>;
export type ToolFinalRecord = z.infer<typeof ToolFinalRecord>;

export const ToolRetryPolicy = z.enum(["safe", "never"]);
export type ToolRetryPolicy = z.infer<typeof ToolRetryPolicy>;

/** KV `fleet_tools` value under key `<toolName>`. `parameters` is a JSON Schema object. */
export const ToolRegistration = z.object({
  name: ToolName,
  description: z.string(),
  parameters: z.record(z.string(), z.unknown()),
  executionMode: z.enum(["parallel", "sequential"]).default("parallel"),
  retry: ToolRetryPolicy.default("safe"),
  timeoutMs: z.number().int().positive().default(180_000),
  version: z.string().min(1).default("1"),
  runnerId: z.string().optional(),
  registeredAt: z.number().int().optional(),
});
export type ToolRegistration = z.infer<typeof ToolRegistration>;

export { BlobRef } from "./blob-ref.js";

/**
 * Runner presence: key `runner.<runnerId>` in KV `fleet_leases`, rewritten every TTL/3 and removed
 * by the bucket's TTL when the runner dies (deleted on a clean stop). A runner is *live* while its key
 * exists. The value lists the tools it serves with their version and schema hash.
 */
export const RunnerPresence = z.object({
  runnerId: z.string(),
  tools: z.record(z.string(), z.object({ version: z.string(), schemaHash: z.string() })),
  startedAt: z.number(),
  ts: z.number(),
});
export type RunnerPresence = z.infer<typeof RunnerPresence>;

export const runnerPresenceKey = (runnerId: string) => `runner.${runnerId}`;
/** KV key filter of every runner's presence. */
export const RUNNER_PRESENCE_KEYS = "runner.>";
