// Replay with overrides (change 51): the request, the record a replay session keeps on its log, and
// the tool results it answers with in recorded mode. Pure.
import { z } from "zod";
import { ModelRef } from "../config.js";
import { ToolResultContentBlock } from "../content.js";
import { EventId, SessionId, ToolName } from "../ids.js";
import { ThinkingLevel, UserMessage } from "../messages.js";

/** The settings a replay runs with instead of the source's (absent: the source's at the fork point). */
export const ReplayOverrides = z.object({
  model: ModelRef.optional(),
  thinkingLevel: ThinkingLevel.optional(),
  systemPrompt: z.string().optional(),
  /** The active tools (names of registered tools). */
  activeTools: z.array(ToolName).optional(),
});
export type ReplayOverrides = z.infer<typeof ReplayOverrides>;

/**
 * `recorded`: a tool call with the same name and arguments as a call of the source gets that call's
 * result (the n-th such call the n-th recorded one, then the last); any other call gets an error
 * result saying so, and no tool runs. `live`: tools run for real.
 */
export const ToolsMode = z.enum(["recorded", "live"]);
export type ToolsMode = z.infer<typeof ToolsMode>;

/** What a `replay` command asks for. */
export const ReplayRequest = z.object({
  /** The source session. */
  sessionId: SessionId,
  /**
   * The last entry of the source's current branch kept as is; the user messages after it are run
   * again. Absent: the entry before the branch's first user message (the whole session is replayed).
   */
  fromEntry: EventId.optional(),
  overrides: ReplayOverrides.optional(),
  /** Default `recorded`. */
  toolsMode: ToolsMode.optional(),
});
export type ReplayRequest = z.infer<typeof ReplayRequest>;

/** One tool call of the source after the fork point, with its result. */
export const RecordedToolCall = z.object({
  toolName: z.string().min(1),
  args: z.unknown(),
  content: z.array(ToolResultContentBlock),
  isError: z.boolean(),
  details: z.unknown().optional(),
});
export type RecordedToolCall = z.infer<typeof RecordedToolCall>;

/**
 * `session_created.replayOf`: what a replay session replays, recorded when it is created. The
 * remaining turns and the recorded results are in the log, so any loop worker carries the replay on.
 */
export const ReplayRecord = z.object({
  /** The source session. */
  sessionId: SessionId,
  /** The source entry the new session's copied branch ends with (`null`: nothing copied). */
  fromEntry: EventId.nullable(),
  /** How many entries the new session copied from the source (its first entries). */
  kept: z.number().int().nonnegative(),
  /** The source's leaf when the replay was created: the replayed range ends there. */
  toEntry: EventId.nullable(),
  overrides: ReplayOverrides,
  toolsMode: ToolsMode,
  /** The source's user messages after `fromEntry`, in order: turn `k` is a prompt with `turns[k]`. */
  turns: z.array(UserMessage),
  /** The source's tool calls after `fromEntry` with their results (empty in `live` mode). */
  recorded: z.array(RecordedToolCall),
});
export type ReplayRecord = z.infer<typeof ReplayRecord>;

/** JSON with object keys sorted: equal values give equal text whatever their key order. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : v,
  );
}

/** A tool call as the recorded mode matches it. */
export interface ReplayToolCall {
  toolName: string;
  args: unknown;
}

/** The result a replayed call gets in `recorded` mode. */
export interface RecordedResult {
  content: RecordedToolCall["content"];
  isError: boolean;
  details?: unknown;
}

export const NO_RECORDED_RESULT = (toolName: string) =>
  `Replay with recorded tools: the original session made no ${toolName} call with these arguments, so there is no recorded result; the tool was not run`;

/**
 * The recorded result of `call`, the `earlier`-th of the replay's calls with its name and arguments
 * (0: the first): the recorded call with the same name and arguments at that rank, or the last of
 * them; an error result when the source made no such call. Arguments compare as canonical JSON.
 */
export function recordedResultOf(
  record: Pick<ReplayRecord, "recorded">,
  call: ReplayToolCall,
  earlier: number,
): RecordedResult {
  const key = canonicalJson(call.args ?? {});
  const matches = record.recorded.filter((r) => r.toolName === call.toolName && canonicalJson(r.args ?? {}) === key);
  const hit = matches[Math.min(earlier, matches.length - 1)];
  if (!hit) return { content: [{ type: "text", text: NO_RECORDED_RESULT(call.toolName) }], isError: true };
  return { content: hit.content, isError: hit.isError, ...(hit.details !== undefined ? { details: hit.details } : {}) };
}

/** The id of the `prompt` command that runs turn `index` of a replay (one per session). */
export const replayTurnCommandId = (index: number): string => `replay-turn-${index}`;
